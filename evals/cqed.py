"""``aisearch eval cqed``: SRSA's contextual queries (CQED), aisearch against same-model RAG and
closed-book, rated 0-5 by SRSA's own LLM judge.

CQED (``../shared/data/cqed/queries.jsonl``: ``id``, ``query``, no gold answer) holds long,
personal questions ("I'm planning a year-long backpacking trip on $5000 …"). For every query the
three systems answer one after the other, exactly as ``aisearch eval qa`` runs them
(:func:`evals.qa_runner.run_system`: aisearch end to end through the real graph, vanilla RAG over
the same index with the same Writer model, closed-book). Then one call of SRSA's judge
(:mod:`evals.cqed_judge`) sees the three answers as Model 1, 2 and 3 in an order shuffled per query
with the run's seed (:func:`blind_order`), and its scores are mapped back to the systems.

Each finished query appends one record to ``<run_dir>/cqed.jsonl``::

    {"id", "query", "order": ["rag", "aisearch", "closed_book"],   # Model 1, 2, 3
     "systems": {name: system record (prediction, short, evidence, latency_s, error, …)},
     "scores": {name: {"informativeness", "completeness", "novelty", "actionability"}},
     "judge": {rating: scores by position, sources, complete, missing, with_example, reply, …}}

so a stopped run resumes where it stopped. The summary (:mod:`evals.cqed_summary`) and the
Markdown report (:mod:`evals.cqed_report`) are rewritten from all records at the end.
"""

from __future__ import annotations

import json
import logging
import random
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langsmith import tracing_context

from evals.cqed_judge import MAX_ANSWER_CHARS, CqedJudge
from evals.cqed_parse import CRITERIA
from evals.cqed_report import write_report
from evals.cqed_summary import RECORDS, SYSTEMS
from evals.judge import shown_answer
from evals.qa_context import QAContext
from evals.qa_data import load_questions
from evals.qa_runner import check_resume, environment, finished_ids, run_system
from evals.run_dirs import RESULTS_DIR
from evals.run_records import load_records

log = logging.getLogger(__name__)

RESUME_KEYS = ("data", "seed", "judge_model", "judge_base_url", "index")


@dataclass
class CqedOptions:
    """What to run, how to judge it, and where to write it."""

    data: Path
    n: int | None = None
    offset: int = 0
    seed: int = 0
    run_dir: Path | None = None
    question_timeout_s: float = 900.0
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_context_tokens: int = 4096
    index: str = ""
    command: str = ""


def default_run_dir(options: CqedOptions) -> Path:
    """``results/cqed-<date>-<dataset>-n<N>-s<seed>[-o<offset>]``."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", Path(options.data).stem).strip("-") or "data"
    parts = [f"cqed-{time.strftime('%Y-%m-%d')}-{name}", f"n{options.n if options.n is not None else 'all'}"]
    parts.append(f"s{options.seed}")
    if options.offset:
        parts.append(f"o{options.offset}")
    return RESULTS_DIR / "-".join(parts)


def blind_order(query_id: str, seed: int, systems: tuple[str, ...] = SYSTEMS) -> list[str]:
    """The systems in the order the judge sees them (Model 1, 2, 3): shuffled per query by ``seed``
    and the query's id, so the order does not depend on which queries ran before (a resumed run
    shows each query as a fresh one would)."""
    order = list(systems)
    random.Random(f"cqed:{seed}:{query_id}").shuffle(order)
    return order


def scores_by_system(
    order: list[str], by_position: dict[int, dict[str, float]]
) -> dict[str, dict[str, float]]:
    """The judge's scores of Model 1, 2, 3 given back to the systems shown in those places."""
    return {order[position - 1]: dict(values) for position, values in by_position.items()}


async def answer_query(
    query: dict[str, Any], context: QAContext, judge: CqedJudge, options: CqedOptions
) -> dict[str, Any]:
    """One query's record: the three systems' answers, the blind judge call, the scores by system."""
    question = {"id": query["id"], "question": query["question"]}
    systems = {
        name: await run_system(name, question, context, options.question_timeout_s) for name in SYSTEMS
    }
    order = blind_order(query["id"], options.seed)
    shown = [shown_answer(systems[name], MAX_ANSWER_CHARS) for name in order]
    rating = await judge.rate(query["question"], shown)
    return {
        "id": query["id"],
        "query": query["question"],
        "order": order,
        "systems": systems,
        "scores": scores_by_system(order, rating.scores),
        "judge": rating.as_dict(),
    }


async def run_cqed(
    options: CqedOptions,
    context: QAContext,
    judge: CqedJudge,
    *,
    queries: list[dict[str, Any]] | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Run every query not yet in the run directory, then summarise and report the whole run.

    Returns:
        The summary (see :mod:`evals.cqed_summary`), also written to ``summary.json``.
    """
    from tqdm import tqdm

    from evals.cqed_summary import summarise_cqed

    run_dir = Path(options.run_dir or default_run_dir(options))
    run_dir.mkdir(parents=True, exist_ok=True)
    check_resume(run_dir, options, RESUME_KEYS)
    config = {**json.loads(json.dumps(asdict(options), default=str)), "run_dir": str(run_dir)}
    config["systems"] = list(SYSTEMS)
    config["criteria"] = list(CRITERIA)
    (run_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if queries is None:
        queries = load_questions(options.data, options.n, options.offset)
    records_path = run_dir / RECORDS
    done = finished_ids(records_path)
    todo = [q for q in queries if q["id"] not in done]
    log.info("%d queries, %d already done, %d to run", len(queries), len(queries) - len(todo), len(todo))
    bar = tqdm(total=len(todo), desc="queries", unit="q", file=sys.stderr, disable=not show_progress)
    for query in todo:
        with tracing_context(enabled=False):  # offline: the graph's LangChain runs are not uploaded
            record = await answer_query(query, context, judge, options)
        with open(records_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=str) + "\n")
        bar.update(1)
    bar.close()
    wanted = {q["id"] for q in queries}
    records = [r for r in load_records(records_path) if r["id"] in wanted]
    config.update(environment())
    config["date"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    summary = summarise_cqed(records, config)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    write_report(run_dir, summary)
    return summary
