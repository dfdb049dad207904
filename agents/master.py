"""The Master's assessment: reads a query and picks the team (its review is ``agents/review.py``).

Seed 001 §2 and §3.5: the Master never answers the query itself. It classifies complexity
(simple → Writer-only, moderate → Executor-inclusive, complex → Planner-enhanced), names the SRSA
search strategy (seed 002: direct, parallel, serial), resolves follow-ups against the conversation
and grounds relative dates; a quick probe of the local documents sends questions they cover to
be searched. When web search is configured, questions about live or recent facts and factual
questions the documents do not answer are searched on the web; without it, a question about the
present is answered with what is missing, not a guess.

The decision is cheap first (``agents/router.py``: rules, the probe, the route classifier) and
asks the Master's LLM (``agents/assessment.py``) only for what those leave open, or for every
query with ``routing = "llm"``.

When the run may ask (``Settings.clarify``, off by default), the LLM assessment also names a
question to ask about an ambiguous query (``clarify``), and the Master hands it to the
``clarify`` node (``agents/clarify.py``), which pauses the run until a person answers. With
asking off the prompt and the reply schema are exactly as without the feature.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from agents.answer_form import is_open_question
from agents.assessment import Probe, Reading, llm_reading, probe_covers, probe_on_topic, route_for
from agents.recall import recall
from agents.route_classifier import shared_classifier
from agents.router import CheapRoute, Classifier, cheap_route, needs_tools
from agents.strategies import link_tool
from agents.web_route import NO_WEB_ANSWER, NO_WEB_GAP, lacks_the_web, wants_web, web_configured
from agents.writer import build_answer
from core.events import AnswerEvent, RouteEvent, emit
from core.query import QueryError, prepare_query
from core.run import Run, RunContext, current_run
from core.settings import Settings
from core.state import Clarification, SearchState, turn_start
from tools.hub import query_argument
from tools.registry import WEBSEARCH

log = logging.getLogger(__name__)

PROBE_K = 3


async def probe_documents(run: Run, query: str) -> Probe | None:
    """Search the local documents with the question; the best match, if any search tool reports
    similarities (``docsearch`` does: the MiniLM cosine of each passage to the query)."""
    best: Probe | None = None
    for spec in run.tools.running_specs().values():  # no server is started for the probe
        argument = query_argument(spec)
        if argument is None or spec.server == WEBSEARCH:  # the probe asks the local documents only
            continue
        args: dict[str, Any] = {argument: query}
        if "k" in spec.parameters.get("properties", {}):
            args["k"] = PROBE_K
        # the tool's own timeout: the first search of a fresh server also loads the embedding model
        outcome = await run.call_tool(spec.name, args)
        if not outcome.ok:
            log.info("document probe with %s failed: %s", spec.name, outcome.error)
            continue
        results = (outcome.structured or {}).get("results")
        for item in results if isinstance(results, list) else []:
            similarity = item.get("similarity") if isinstance(item, dict) else None
            if isinstance(similarity, int | float) and (best is None or similarity > best.similarity):
                best = Probe(tool=spec.name, similarity=similarity, title=str(item.get("title", "")))
    return best


async def ground_in_documents(
    run: Run, assessment: Reading, query: str, probe: Probe | None = None
) -> Reading:
    """Probe the local documents; send a question the model would answer from memory to them when
    they cover it.

    The 1.5B master labels "How do I pretty-print JSON in Python?" simple (no tools) even when the
    Python documentation is indexed and the prompt says to search it. A probe search with the
    question decides instead: a passage at least ``document_probe_similarity`` similar (MiniLM
    cosine; on-topic questions score 0.5-0.75 on the stdlib docs, unrelated ones below 0.4) makes
    the query moderate, to be searched. On the other routes the probe is recorded too: tool
    selection puts an on-topic search tool first, whatever the question's wording shares with the
    tool descriptions.
    """
    threshold = run.settings.document_probe_similarity
    if threshold >= 1:
        return assessment
    resolved = assessment.resolved_query or query
    if probe is None or resolved != query:  # a follow-up: probe what it means
        probe = await probe_documents(run, resolved)
    if probe is None:
        return assessment
    assessment.probe = probe
    if probe_covers(probe.similarity, run.settings) and route_for(assessment) == "writer_only":
        assessment.complexity = "moderate"
        assessment.needs_external_info = True
        assessment.escalated = "documents"
        log.info("the local documents cover %r (%s: %.2f)", query, probe.title, probe.similarity)
    return assessment


def _classifier() -> Classifier | None:
    """The route classifier, or None (logged) when its embedding model cannot be loaded."""
    try:
        classifier = shared_classifier()
        classifier.classify("warm-up")
    except Exception as exc:  # noqa: BLE001 - a missing model must not stop routing
        log.warning("the route classifier is unavailable (%s); rules, probe and LLM decide", exc)
        return None
    return classifier


def cheap_reading(decision: CheapRoute, query: str, probe: Probe | None) -> Reading:
    """The Master's reading when the cheap route decided (no LLM call)."""
    return Reading(
        rationale=decision.why,
        resolved_query=query,
        intent=query,
        complexity=decision.complexity,
        needs_external_info=decision.needs_external_info,
        needs_decomposition=decision.strategy != "direct",
        strategy=decision.strategy,
        facets=decision.facets,
        decided_by=decision.decided_by,
        probe=probe,
    )


def on_documents_topic(probe: Probe | None, settings: Settings) -> bool:
    """Whether the probe's best passage is at least ``document_probe_floor`` similar to the query."""
    return probe_on_topic(probe.similarity if probe else None, settings)


def searches_enough(probe: Probe | None, query: str, settings: Settings) -> bool:
    """Whether ``query`` needs no tool beyond searching documents that are on its topic
    (:func:`on_documents_topic`): a complex one then goes to the Executor's search strategies
    rather than the Planner (:func:`agents.assessment.route_for`)."""
    return on_documents_topic(probe, settings) and not needs_tools(query)


def err_towards_evidence(reading: Reading, probe: Probe | None, settings: Settings) -> Reading:
    """A question the Master would answer from memory is searched when the documents cover it
    (``document_probe_similarity``) or, for a factual question, when the probe found anything on
    its topic (``document_probe_floor``): memory only when retrieval shows nothing relevant. Open
    questions (advice, plans) below the cover threshold keep the Master's choice."""
    if route_for(reading) != "writer_only" or probe is None:
        return reading
    covered = probe_covers(probe.similarity, settings)
    on_topic = on_documents_topic(probe, settings) and not is_open_question(reading.resolved_query)
    if covered or on_topic:
        reading.complexity, reading.needs_external_info, reading.escalated = "moderate", True, "documents"
        log.info(
            "searching the documents, not memory: %r (%s: %.2f)",
            reading.resolved_query,
            probe.title,
            probe.similarity,
        )
    return reading


def reach_for_web(reading: Reading, settings: Settings, web: bool) -> Reading:
    """Search the web first when ``agents/web_route.py`` says so; a question the Master would answer
    from memory then becomes moderate, searched directly."""
    similarity = reading.probe.similarity if reading.probe is not None else None
    if wants_web(reading.resolved_query, similarity, settings, web):
        reading.web = True
        if route_for(reading) == "writer_only":
            reading.complexity, reading.needs_external_info, reading.escalated = "moderate", True, "web"
            reading.strategy = "direct"
        log.info("searching the web first: %r", reading.resolved_query)
    return reading


async def read_query(
    run: Run, state: SearchState, query: str, today: str, *, may_ask: bool = False
) -> Reading:
    """Decide the team for ``query``: cheaply when the rules, probe or classifier can, else by LLM.

    ``may_ask``: the run may ask the user what the query means; a question about someone it does
    not name then goes to the LLM (``agents.router.UNRESOLVED``), whose reply may hold a question.
    """
    reading = await _read_query(run, state, query, today, may_ask=may_ask)
    return reach_for_web(reading, run.settings, web_configured(run.tools))


async def _read_query(
    run: Run, state: SearchState, query: str, today: str, *, may_ask: bool = False
) -> Reading:
    threshold = run.settings.document_probe_similarity
    if run.settings.routing == "llm":
        probe = await probe_documents(run, query) if threshold < 1 else None
        reading = await llm_reading(run, state, query, today, may_ask=may_ask, probe=probe)
        reading = await ground_in_documents(run, reading, query, probe)
        reading.search_only = searches_enough(reading.probe, reading.resolved_query, run.settings)
        return err_towards_evidence(reading, reading.probe, run.settings)
    probe = await probe_documents(run, query) if threshold < 1 else None
    covered = probe_covers(probe.similarity if probe else None, run.settings)
    decision = await asyncio.to_thread(
        cheap_route,
        query,
        has_history=bool(state.get("messages")),
        covered=covered,
        classifier=_classifier(),
        follows_links=covered and probe is not None and link_tool(run, probe.tool) is not None,
        may_ask=may_ask,
        on_topic=on_documents_topic(probe, run.settings),
    )
    if decision is not None:
        log.info("route decided by %s: %s", decision.decided_by, decision.why)
        reading = cheap_reading(decision, query, probe)
        reading.search_only = searches_enough(probe, query, run.settings)
        return reading
    reading = await llm_reading(run, state, query, today, may_ask=may_ask, probe=probe)
    if threshold < 1 and reading.resolved_query != query:  # a follow-up: probe what it means
        probe = await probe_documents(run, reading.resolved_query)
    reading.probe = probe
    reading.search_only = searches_enough(probe, reading.resolved_query, run.settings)
    return err_towards_evidence(reading, probe, run.settings)


async def assess(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["writer", "select_tools", "clarify", "__end__"]]:
    """Start a turn: record the question, assess it, and choose the team configuration.

    Writer-only queries go straight to the Writer; the other two configurations select tools first.
    An empty query ends the turn at once with an answer that says so; a huge one is trimmed
    (:func:`core.query.prepare_query`) and the answer says what was left out. When the run may
    ask and the assessment names a question, the turn pauses at ``clarify``; it comes back here
    with the answer folded into the query, and is not asked again. A question answered before
    ends the turn at once with the earlier answer (``agents/recall.py``).
    """
    run = await current_run(runtime)
    try:
        prepared = prepare_query(state.get("query") or "")
    except QueryError as exc:
        answer = build_answer(f"Nothing was searched: {exc}.", [], [])
        emit(AnswerEvent(event="answer", answer=answer))
        return Command(goto=END, update={"answer": answer, "query": ""})  # type: ignore[arg-type]  # langgraph types END as str
    query = prepared.text
    # the date, not the time of day: the roles' prompts then stay the same all day (a plan is
    # reproducible and the server's prompt cache holds); the time comes from the clock tools
    today = run.now().strftime("%A, %Y-%m-%d %Z").strip()
    pending = state.get("clarification")
    clarified = pending is not None and pending["status"] == "answered"  # back from clarify
    cached = None if clarified or prepared.trim_note else await recall(run, state, query, today)
    if cached is not None:  # asked before: the earlier answer, before the team runs
        return Command(goto=END, update=cached)  # type: ignore[arg-type]  # langgraph types END as str
    may_ask = run.settings.clarify and not clarified
    assessment = await read_query(run, state, query, today, may_ask=may_ask)
    if may_ask and assessment.clarify.strip():
        question = " ".join(assessment.clarify.split())
        log.info("asking the user about %r: %s", query, question)
        asked = Clarification(question=question, asked_query=query, answer="", status="asked")
        return Command(goto="clarify", update={"query": query, "clarification": asked})
    route = route_for(assessment)
    record = assessment.record()
    emit(RouteEvent(event="route", route=route, assessment=record))
    update = {
        "query": query,
        "messages": [HumanMessage(content=query)],
        "today": today,
        "assessment": record,
        "clarification": Clarification(**{**pending, "status": "used"}) if pending and clarified else None,
        "route": route,
        **turn_start(missing=[prepared.trim_note] if prepared.trim_note else None),
        "answer": None,
    }
    similarity = assessment.probe.similarity if assessment.probe is not None else None
    if lacks_the_web(run.tools, assessment.resolved_query or query, similarity, run.settings):
        log.info("not answered from memory: %r asks about the present and web search is off", query)
        answer = build_answer(NO_WEB_ANSWER, [], [NO_WEB_GAP])
        emit(AnswerEvent(event="answer", answer=answer))
        messages = [HumanMessage(content=query), AIMessage(content=answer["text"])]
        return Command(goto=END, update=update | {"answer": answer, "messages": messages})  # type: ignore[arg-type]  # langgraph types END as str
    return Command(goto="writer" if route == "writer_only" else "select_tools", update=update)
