"""Which part of a strategy's reading loses to RAG: the passages, the prompt or the choices hint.

``python -m evals.reader_ablation --data DEV.jsonl --type comparison`` reads every question of
one type with the same 1.5B model several ways, without the graph, over the evaluation index
(built by ``aisearch eval qa``):

* ``writer_question_top5``: the Writer's answer prompt (with the "one of: A or B" hint) on the
  question's hybrid top 5 — what the *direct* strategy reads;
* ``writer_parallel_nohint``: the Writer's prompt without the hint on the *parallel* strategy's
  passages (2 per entity the question names, then 2 of the question itself);
* ``rag_parallel``: RAG's prompt on the parallel passages; ``rag_parallel_question_first``: the
  same with the question's own passages first.

One JSON line per question goes to ``--out``; the EM/F1 per variant are printed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from agents.facets import answer_choices, comparison_facets, is_yes_no_question
from agents.short_answer import clean_short, short_of
from agents.writer import BRIEF
from evals.baseline import first_line, format_context
from evals.metrics import exact_match, token_f1
from evals.qa_data import load_questions
from evals.retrieval import default_eval_index_dir
from models.config import load_model_settings
from models.factory import build_chat_model
from models.local_server import ensure_server
from prompts import render
from tools.index.search import Searcher
from tools.index.store import IndexStore

FACET_K = 2
QUESTION_K = 5
VARIANTS = ("writer_question_top5", "writer_parallel_nohint", "rag_parallel", "rag_parallel_question_first")


def writer_prompt(question: str, passages: list[dict[str, Any]], hint: bool) -> str:
    """The Writer's answer turn for ``passages`` (as ``agents/writer.py`` builds it)."""
    sources = "\n\n".join(f"[{n}] {p['title']}: {p['content'][:1500]}" for n, p in enumerate(passages, 1))
    options = answer_choices(question) if hint else []
    choices = f"\n(The answer is one of: {' or '.join(options)}.)" if options else ""
    form = (
        "yes or no"
        if is_yes_no_question(question)
        else "a name, a date, a number or a few words, not yes or no"
    )
    return render(
        "writer_answer",
        today="",
        sources=sources,
        findings="",
        missing="",
        query=question,
        choices=choices,
        how=BRIEF.format(form=form),
    )


def prompts_for(
    question: str, top: list[dict[str, Any]], parallel: list[dict[str, Any]], own: int
) -> dict[str, tuple[str, str]]:
    """(system prompt name, user prompt) of every variant."""
    question_first = parallel[-own:] + parallel[:-own] if own else parallel
    return {
        "writer_question_top5": ("reader_system", writer_prompt(question, top, hint=True)),
        "writer_parallel_nohint": ("reader_system", writer_prompt(question, parallel, hint=False)),
        "rag_parallel": (
            "baseline_system",
            render("baseline_rag", context=format_context(parallel), question=question),
        ),
        "rag_parallel_question_first": (
            "baseline_system",
            render("baseline_rag", context=format_context(question_first), question=question),
        ),
    }


async def run(data: Path, kind: str, out: Path, n: int | None = None) -> dict[str, dict[str, float]]:
    """Read every question of type ``kind`` each way; EM and F1 per variant."""
    questions = [q for q in load_questions(data, n=n) if q["type"] == kind]
    settings = load_model_settings()
    ensure_server(settings)
    writer = build_chat_model("writer", settings).model_copy(update={"streaming": False})
    model = writer.bind(max_tokens=32, temperature=0)
    searcher = Searcher(IndexStore(default_eval_index_dir()).require("hotpotqa"))

    def passages(query: str, k: int) -> list[dict[str, Any]]:
        hits = searcher.rank(query, k, "hybrid")
        stored = searcher.fetch([h.id for h in hits])
        return [{"id": h.id, "title": stored[h.id].get("title", ""), "content": stored[h.id].get("text", "")}
                for h in hits if h.id in stored]  # fmt: skip

    totals = {name: {"em": 0.0, "f1": 0.0} for name in VARIANTS}
    with out.open("w") as sink:
        for q in questions:
            facets = comparison_facets(q["question"])[:3]
            parallel = [p for facet in facets for p in passages(facet, FACET_K)]
            own = FACET_K if facets else QUESTION_K
            parallel += passages(q["question"], own)
            first: dict[str, dict[str, Any]] = {}
            for p in parallel:
                first.setdefault(p["id"], p)
            parallel = list(first.values())
            top = passages(q["question"], QUESTION_K)
            record: dict[str, Any] = {"id": q["id"], "gold": q["answer"]}
            for name, (system, prompt) in prompts_for(q["question"], top, parallel, own).items():
                reply = await model.ainvoke(
                    [SystemMessage(content=render(system)), HumanMessage(content=prompt)]
                )
                text = str(reply.content)
                short = short_of(text) if system == "reader_system" else clean_short(first_line(text))
                record[name] = {
                    "short": short,
                    "em": exact_match(short, q["answer"]),
                    "f1": token_f1(short, q["answer"]),
                }
                totals[name]["em"] += record[name]["em"]
                totals[name]["f1"] += record[name]["f1"]
            sink.write(json.dumps(record) + "\n")
            sink.flush()
    count = max(len(questions), 1)
    return {name: {k: round(v / count, 3) for k, v in scores.items()} for name, scores in totals.items()}


def main() -> None:
    """Command line: ``python -m evals.reader_ablation --data DEV.jsonl [--type comparison]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--type", default="comparison")
    parser.add_argument("--n", type=int, help="only the first n questions of the file")
    parser.add_argument("--out", type=Path, default=Path("reader-ablation.jsonl"))
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.data, args.type, args.out, args.n)), indent=2))  # noqa: T201


if __name__ == "__main__":
    main()
