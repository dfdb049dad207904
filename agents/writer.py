"""The Writer: synthesizes the answer from the task results and cites every claim.

Seed 001 §5 and the PA-RAG prompt (§5.3.3): the Writer reads the numbered sources (task evidence),
resolves or reports conflicting figures, answers in the query's language and cites ``[n]``. The
citations are then checked (``agents/citations.py``): uncited sentences are attributed to the
source that supports them, unsupported citations dropped, both recorded. The answer object
carries its citations structurally (number → evidence id), marks which cited sources are the
model's own knowledge, and lists what could not be found.

A comparison of named entities ("Which came first, A or B?", "Were A and B both …?") is first
read one entity at a time and settled in code (``agents/compare.py``); dates and numbers are
their own cited reasons, a yes/no the Writer explains, and the Writer reads the question whole
when the readings leave it open. On the Planner route the values the tasks returned are in the
prompt, and a quantity the plan computed answers a "how many" question (``agents/plan_answer.py``).
"""

from __future__ import annotations

import logging
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from agents.answer_check import Reading, not_the_answer, what_stands
from agents.answer_form import is_open_question
from agents.chain_answer import (
    broken_chain_sources,
    chain_reasons,
    chain_record,
    complete,
    findings,
    on_the_way,
)
from agents.citations import check_citations
from agents.compare import Verdict, cited_facts, comparison_of, read_each
from agents.evidence import newest_first
from agents.facets import answer_choices, is_yes_no_question
from agents.focus import focus_passages
from agents.plan_answer import plan_findings, plan_reasons, plan_settled, plan_verdict
from agents.quote import quoted_readings, quoted_reason
from agents.recall import remember
from agents.short_answer import explanation_of, short_of
from agents.web_route import asks_about_now, for_another_tool
from core.events import AnswerEvent, emit
from core.plan import current_plan
from core.run import RunContext, current_run
from core.state import Answer, Citation, Evidence, SearchState, Source, resolved_query, task_evidence_ids
from core.text import CITATION, format_history, sentences
from models.errors import MODEL_ERRORS, describe_model_error, is_context_overflow
from models.structured import decode_entities, message_text, strip_thinking
from prompts import render

log = logging.getLogger(__name__)

UNANSWERED = "No answer could be written: {problem}. The sources found are listed below."
MAX_SOURCE_CHARS = 1500  # a whole encyclopedia paragraph (97 % of HotpotQA's are shorter)
SHORT_TOKENS = 32  # the short answer: a name, a date, a number, yes/no
EXPLAIN_TOKENS = 64  # one cited sentence, not a restatement of the sources
SUMMARY_TOKENS = 64  # an open question's first turn: one sentence that sums the answer up
FULL_TOKENS = 512  # an open question's answer in full: a few cited paragraphs
BRIEF = "with a short phrase only: {form}. No explanation, no full sentence."
SUMMED_UP = "in one sentence that sums up the answer. No details yet."


def number_sources(state: SearchState) -> list[Evidence]:
    """The evidence in plan order (task by task), each cited as ``[n]`` by its 1-based position.

    For a question about the present (``agents/web_route.py``) a task's dated pages come first,
    newest first.
    """
    evidence = state.get("evidence", {})
    order = [task["id"] for task in plan["tasks"]] if (plan := state.get("plan")) else []
    recent = asks_about_now(resolved_query(state))
    ordered: list[Evidence] = []
    for task_id in order:
        found = [evidence[eid] for eid in task_evidence_ids(state, task_id) if eid in evidence]
        for item in newest_first(found) if recent else found:
            if item not in ordered:
                ordered.append(item)
    return ordered


def format_sources(sources: list[Evidence], focus: list[str] | None = None, max_chars: int = 0) -> str:
    """The numbered source list of the prompt, one paragraph per source (as single-shot RAG reads them).

    With ``max_chars``, the passages together are cut to that many characters, each to the
    sentences that matter for the questions in ``focus`` (``agents/focus.py``).
    """
    texts = [item["content"][:MAX_SOURCE_CHARS] for item in sources]
    if max_chars and focus:
        texts = focus_passages(texts, focus, max_chars)
    lines = []
    for n, (item, text) in enumerate(zip(sources, texts, strict=True), start=1):
        label = " (model knowledge)" if item["kind"] == "model" else ""
        lines.append(f"[{n}]{label} {item['title']}: {text}")
    return "\n\n".join(lines)


def build_answer(text: str, sources: list[Evidence], missing: list[str], short: str = "") -> Answer:
    """The structured answer: the short answer, the cited text, citations mapped to evidence ids,
    sources, gaps."""
    cited = []
    invalid = []
    for match in CITATION.finditer(text):
        n = int(match.group(1))
        if 1 <= n <= len(sources):
            if n not in cited:
                cited.append(n)
        elif n not in invalid:
            invalid.append(n)
    for n in invalid:
        text = text.replace(f"[{n}]", "")
    citations: list[Citation] = [
        {
            "n": n,
            "evidence_id": sources[n - 1]["id"],
            "kind": sources[n - 1]["kind"],
            "title": sources[n - 1]["title"],
            "source": sources[n - 1]["source"],
        }
        for n in sorted(cited)
    ]
    claims = [s for s in sentences(text) if len(s.split()) > 3]
    uncited = [s for s in claims if not CITATION.search(s)] if sources else []
    model_only = [c["n"] for c in citations if c["kind"] == "model"]
    return {
        "short": short,
        "text": text.strip(),
        "citations": citations,
        "sources": [
            cast(
                Source,
                {"n": n, **{k: s[k] for k in ("id", "kind", "title", "source", "published") if k in s}},
            )
            for n, s in enumerate(sources, start=1)
        ],
        "basis": "sources" if sources else "model_knowledge",
        "model_knowledge_citations": model_only,
        "uncited_sentences": uncited,
        "invalid_citations": invalid,
        "missing": missing,
    }


async def answer_first(model: BaseChatModel, prompt: str, reading: Reading) -> tuple[str, str, str | None]:
    """The short answer, then its explanation: two turns of one conversation.

    The first turn asks for the answer alone (a short phrase, as single-shot RAG asks); the
    second asks why, citing the sources, unless a source sentence that states the answer explains
    it (``agents/quote.py``, when ``reading.quote_from`` is given). The second turn extends the
    first one's prompt and reply, so a llama.cpp server reuses the whole prefix and only reads the
    new question. A model that writes ``Answer: …`` or its reasons anyway is parsed the same way.
    An answer already settled (a comparison read entity by entity) stands as the first turn's
    reply. An open question gets a one-sentence summary first, then its answer in full.

    Returns:
        The short answer, the explanation, and what went wrong when the explanation's call failed
        (the short answer is kept).

    Raises:
        The model errors of the first turn (:data:`models.errors.MODEL_ERRORS`).
    """
    system = SystemMessage(content=render("reader_system"))
    question = HumanMessage(content=prompt)
    if reading.settled:
        first_text = reading.settled
    else:
        first_tokens = SUMMARY_TOKENS if reading.full else SHORT_TOKENS
        first = await model.bind(max_tokens=first_tokens, temperature=0).ainvoke([system, question])
        first_text = decode_entities(strip_thinking(message_text(first)))
    again = not_the_answer(short_of(first_text), reading)
    if again is not None:  # asked once more, in the same conversation
        reply = await model.bind(max_tokens=SHORT_TOKENS, temperature=0).ainvoke(
            [system, question, AIMessage(content=first_text), again]
        )
        first_text = what_stands(first_text, decode_entities(strip_thinking(message_text(reply))), reading)
    short = short_of(first_text)
    quote = quoted_reason(short, reading.quote_from, reading.question) if reading.quote_from else None
    if quote is not None:  # the source's own sentence explains the answer: no second turn
        return short, quote, None
    explain = ("writer_explain_direct" if reading.direct else "writer_explain") + (
        "_long" if reading.full else ""
    )
    follow_up = HumanMessage(content=render(explain))
    turns = [system, question, AIMessage(content=first_text), follow_up]
    try:
        second = await model.bind(max_tokens=FULL_TOKENS if reading.full else EXPLAIN_TOKENS).ainvoke(turns)
    except MODEL_ERRORS as exc:
        problem = describe_model_error(exc)
        log.warning("the Writer's explanation failed (%s); answering with the short answer", problem)
        return short, short, problem
    return short, explanation_of(decode_entities(strip_thinking(message_text(second)))), None


def _prompt(
    state: SearchState, sources: list[Evidence], missing: list[str], reading: Reading, max_chars: int = 0
) -> str:
    """The answer turn's prompt: the question with the numbered sources (cut to ``max_chars`` of
    the sentences that matter when set), or alone (direct); an open question is first summed up
    in one sentence."""
    query = state["query"]
    if reading.direct:
        history = format_history(state.get("messages", [])[:-1])
        how = SUMMED_UP if reading.full else BRIEF.format(form="a name, a date, a number, or yes/no")
        return render("writer_direct", today=state.get("today", ""), history=history, query=query, how=how)
    gaps = "Could not be found: " + "; ".join(missing) + "\n" if missing else ""
    failures = [
        f"{result['goal']}: {result.get('error') or result['status']}"
        for result in state.get("results", {}).values()
        if result["status"] != "ok" and result["goal"] not in " ".join(missing)
    ]
    if failures:
        gaps += "Problems: " + "; ".join(failures) + "\n"
    resolved = resolved_query(state)
    hop_queries = [record["query"] for record in state.get("hops") or [] if record["query"]]
    question = query if resolved == query else f"{query} (meaning: {resolved})"
    options = answer_choices(resolved)
    choices = f"\n(The answer is one of: {' or '.join(options)}.)" if options else ""
    form = (
        "yes or no"
        if is_yes_no_question(resolved)
        else "a name, a date, a number or a few words, not yes or no"
    )
    return render(
        "writer_answer",
        today=state.get("today", ""),
        sources=format_sources(sources, [resolved, *hop_queries], max_chars) or "(none)",
        findings=findings(state.get("hops") or []) + plan_findings(state),
        missing=gaps,
        query=question,
        choices="" if reading.full else choices,
        how=SUMMED_UP if reading.full else BRIEF.format(form=form),
    )


def about_now(query: str) -> bool:
    """Whether ``query`` asks about the present or the clock (today's date may be its answer)."""
    return asks_about_now(query) or for_another_tool(query)


def said_by(sources: list[Evidence], query: str) -> str:
    """The text of ``sources`` and ``query``: where a date the answer gives must stand."""
    return "\n".join([query, *(f"{item['title']} {item['content']}" for item in sources)])


async def _read(
    model: BaseChatModel,
    state: SearchState,
    sources: list[Evidence],
    missing: list[str],
    reading: Reading,
) -> tuple[str, str, str | None]:
    """The answer from as many sources as fit the model's context.

    A prompt the endpoint rejects as too long is retried with the first half of the sources (their
    numbers stay the same); any other model failure leaves an empty answer and says what failed.
    """
    kept = sources
    while True:
        try:
            prompt = _prompt(state, kept, missing, reading, reading.source_chars)
            return await answer_first(model, prompt, reading)
        except MODEL_ERRORS as exc:
            if is_context_overflow(exc) and len(kept) > 1:
                log.warning(
                    "the Writer's prompt did not fit the context; retrying with %d sources", len(kept) // 2
                )
                kept = kept[: len(kept) // 2]
                continue
            problem = describe_model_error(exc)
            log.warning("the Writer could not answer: %s", problem)
            return "", UNANSWERED.format(problem=problem), problem


async def _compare(model: BaseChatModel, state: SearchState, sources: list[Evidence]) -> Verdict | None:
    """A comparison question read one entity at a time (``agents/compare.py``); None for other
    questions, or when a reading fails (the Writer then reads the question whole)."""
    question = resolved_query(state)
    comparison = comparison_of(question)
    if comparison is None:
        return None
    try:
        return await read_each(model, comparison, question, sources)
    except MODEL_ERRORS as exc:
        problem = describe_model_error(exc)
        log.warning("reading the compared entities failed (%s); reading the question whole", problem)
        return None


async def write(state: SearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Write the final answer of the turn (never raises on a failing model endpoint)."""
    run = await current_run(runtime)
    sources = number_sources(state)
    missing = list(dict.fromkeys(state.get("missing", [])))
    direct = state.get("route") == "writer_only" or (not sources and not state.get("plan"))
    model = run.model("writer")
    question = resolved_query(state)
    full = is_open_question(question)
    hops = state.get("hops") or []
    chained = complete(hops) and not full
    evidence_ids = {tid: result["evidence_ids"] for tid, result in state.get("results", {}).items()}
    if hops and not complete(hops):
        sources = broken_chain_sources(hops, evidence_ids, sources)
    compares = sources and not direct and not full and not hops
    verdict = (plan_verdict(state, sources) or await _compare(model, state, sources)) if compares else None
    reasons = (
        (cited_facts(verdict, sources) or quoted_readings(verdict, sources, question)) if verdict else None
    )
    computed = plan_settled(state) if not verdict else None
    computed_reasons = plan_reasons(state, sources) if computed else None
    if chained:  # every hop answered: the last answers the question, each is a cited reason
        short, text, problem = hops[-1]["answer"], chain_reasons(hops, evidence_ids, sources), None
    elif verdict and verdict.answer and reasons:  # each entity's reading, cited: no model call
        short, text, problem = verdict.answer, reasons, None
    elif computed and computed_reasons:  # a quantity the plan computed: its tasks are the reasons
        short, text, problem = computed, computed_reasons, None
    else:
        cut = 0 if full else run.settings.writer_source_chars  # an open question reads its sources whole
        steps = tuple((hop["query"], hop["answer"]) for hop in on_the_way(hops))
        # a name, date or number read from the sources (not a comparison's or computation's
        # answer, which a quote would not explain, nor a yes/no)
        quotable = run.settings.writer_quotes and not (direct or full or verdict or computed)
        quotable = quotable and not is_yes_no_question(question)
        reading = Reading(
            direct=direct,
            full=full,
            settled=verdict.answer if verdict else computed,
            source_chars=cut,
            steps=() if full else steps,
            today=state.get("today", ""),
            said="" if direct or about_now(question) else said_by(sources, question),
            quote_from=tuple(sources) if quotable else (),
            question=question,
        )
        short, text, problem = await _read(model, state, sources, missing, reading)
    if problem:
        missing.append(f"the written answer ({problem})")
    check = check_citations(text, sources)
    answer = build_answer(check.text, sources, missing, short)
    answer["attributed_citations"] = check.attributed
    answer["dropped_citations"] = check.dropped
    plan = current_plan(state)
    answer["plan_version"] = plan.version if plan else None
    answer["length"] = "full" if full else "brief"
    if hops:
        answer["chain"] = chain_record(hops, state)
    if verdict:
        answer["compared"] = {"form": verdict.form, "facts": verdict.facts, "settled": verdict.answer}
    emit(AnswerEvent(event="answer", answer=answer))
    await remember(run, state, answer)
    return {"answer": answer, "messages": [AIMessage(content=answer["text"])]}
