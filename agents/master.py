"""The Master's assessment: reads a query and picks the team (its review is ``agents/review.py``).

Seed 001 §2 and §3.5: the Master never answers the query itself. It classifies complexity
(simple → Writer-only, moderate → Executor-inclusive, complex → Planner-enhanced), names the SRSA
search strategy (seed 002: direct, parallel, serial), resolves follow-ups against the conversation
and grounds relative dates; a quick probe of the local documents sends questions they cover to
be searched. When web search is configured, questions about live or recent facts and factual
questions the documents do not answer are searched on the web; without it, a question about the
present is answered with what is missing, not a guess.

The decision is cheap first (``agents/router.py``: rules, the probe, the route classifier) and
asks the Master's LLM only for what those leave open, or for every query with
``routing = "llm"``.

When the run may ask (``Settings.clarify``, off by default), the LLM assessment also names a
question to ask about an ambiguous query (``clarify``), and the Master hands it to the
``clarify`` node (``agents/clarify.py``), which pauses the run until a person answers. With
asking off the prompt and the reply schema are exactly as without the feature.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite
from pydantic import BaseModel, Field

from agents.answer_form import is_open_question
from agents.facets import comparison_facets
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
from core.state import Assessment, Clarification, Complexity, Route, SearchState, Strategy
from core.text import format_history
from models.structured import structured_call
from prompts import render
from tools.hub import ToolSpec, query_argument
from tools.question_forms import COMPLEX_HINTS, EXTERNAL_HINTS
from tools.registry import WEBSEARCH

log = logging.getLogger(__name__)

ROUTES: dict[str, Route] = {"simple": "writer_only", "moderate": "executor", "complex": "planner"}
MAX_DOCUMENTS_LINE = 300
PROBE_K = 3
CLARIFY_RULE = (
    '\nclarify: "" unless the question cannot be answered as asked; then one short question for the user '
    '(who "he" or "she" is when there is no conversation, which of several well-known things a name means, '
    "a missing place or time that changes the answer)."
)
CLARIFY_FIELD = ', "clarify": ""'


class AssessmentReply(BaseModel):
    """What the master model writes: a short rationale first, then the verdict."""

    rationale: str = ""
    resolved_query: str = ""
    intent: str = ""
    facts_to_find: list[str] = Field(default_factory=list)
    complexity: Complexity
    needs_external_info: bool = False
    needs_decomposition: bool = False
    strategy: Strategy = "direct"


class ClarifyingReply(AssessmentReply):
    """The reply when the run may ask the user: the assessment and a question, or ``""``."""

    clarify: str = ""


def assess_prompt(today: str, history: str, query: str, documents: str, *, may_ask: bool = False) -> str:
    """The Master's assessment prompt; ``may_ask`` adds the ``clarify`` rule and field."""
    return render(
        "master_assess",
        today=today,
        history=history,
        query=query,
        documents=documents,
        clarify_rule=CLARIFY_RULE if may_ask else "",
        clarify_field=CLARIFY_FIELD if may_ask else "",
    )


class Probe(BaseModel):
    """A quick search of the local documents with the question itself."""

    tool: str
    similarity: float
    title: str = ""


class Reading(AssessmentReply):
    """The Master's reading of a query, as recorded in the state."""

    facets: list[str] = Field(default_factory=list)
    decided_by: str = "llm"
    search_only: bool = False
    fallback: bool = False
    escalated: str | None = None
    probe: Probe | None = None
    web: bool = False  # searched on the web first (a live or recent fact, or beyond the documents)
    clarify: str = ""  # the question to ask the user (only when the run may ask); not recorded

    def record(self) -> Assessment:
        """The reading as the state's :class:`~core.state.Assessment` record."""
        return Assessment(**self.model_dump(exclude={"clarify"}))  # type: ignore[typeddict-item]


LEVELS = ("simple", "moderate", "complex")


def calibrate(reply: AssessmentReply, query: str) -> Reading:
    """Raise the model's complexity where the query's form or the model's own facts demand more.

    Small models under-call complexity: a 1.5B model labels "Who is elder, A or B, by how many
    years?" simple while listing two facts to find. The verdict is the highest of the model's
    label, the keyword rules and the facts it listed (two or more facts from outside → complex).
    """
    assessment = Reading(**reply.model_dump())
    votes = {"model": LEVELS.index(reply.complexity)}
    rule = rule_assessment(query)
    votes["rules"] = LEVELS.index(rule.complexity)
    several_facts = len([fact for fact in reply.facts_to_find if fact.strip()]) >= 2
    votes["facts"] = 2 if several_facts and reply.needs_external_info else 0
    source, level = max(votes.items(), key=lambda item: item[1])
    if level > votes["model"]:
        assessment.complexity = LEVELS[level]  # type: ignore[assignment]
        assessment.escalated = source
        assessment.needs_external_info = True
        if level == 2:
            assessment.needs_decomposition = True
            if assessment.strategy == "direct":
                assessment.strategy = rule.strategy if source == "rules" else "parallel"  # type: ignore[assignment]
    return assessment


def usable_resolution(resolved: str, query: str) -> str:
    """The model's self-contained rewrite of the query, unless it is not a rewrite at all.

    Small models sometimes answer in ``resolved_query`` ("To pretty-print JSON, use json.dumps…")
    instead of restating the question; every later role would then work on that answer. A rewrite
    of a question must stay a question, and not balloon: otherwise the query is kept as asked.
    """
    resolved = " ".join(resolved.split())
    if not resolved:
        return query
    asked_question = query.rstrip().endswith(("?", "？"))
    if asked_question and not resolved.endswith(("?", "？")):
        log.info("resolved_query is not a question, keeping the query: %r", resolved[:120])
        return query
    if len(resolved) > max(3 * len(query), len(query) + 160):
        log.info("resolved_query is far longer than the query, keeping the query: %r", resolved[:120])
        return query
    return resolved


def rule_assessment(query: str) -> Reading:
    """A keyword-based assessment, used when the model's output cannot be parsed."""
    if COMPLEX_HINTS.search(query):
        complexity, strategy = "complex", "parallel"
    elif EXTERNAL_HINTS.search(query):
        complexity, strategy = "moderate", "direct"
    else:
        complexity, strategy = "simple", "direct"
    return Reading(
        rationale="rule-based fallback (the model's assessment could not be parsed)",
        resolved_query=query,
        intent=query,
        complexity=complexity,
        needs_external_info=complexity != "simple",
        needs_decomposition=complexity == "complex",
        strategy=strategy,
        facets=comparison_facets(query),
        decided_by="fallback",
        fallback=True,
    )


def searchable_documents(specs: Iterable[ToolSpec]) -> str:
    """The search tools of this run and what they hold (first line of each description)."""
    lines = [
        f"- {spec.name}: {spec.description.split(chr(10))[0][:MAX_DOCUMENTS_LINE]}"
        for spec in specs
        if query_argument(spec)
    ]
    return "\n".join(lines) or "(none)"


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
    if probe.similarity >= threshold and route_for(assessment) == "writer_only":
        assessment.complexity = "moderate"
        assessment.needs_external_info = True
        assessment.escalated = "documents"
        log.info("the local documents cover %r (%s: %.2f)", query, probe.title, probe.similarity)
    return assessment


def route_for(assessment: Reading) -> Route:
    """The team configuration for an assessment.

    A "simple" query that needs outside facts is moderate; a complex one that the documents answer
    without other tools goes to the Executor, whose SRSA strategy (parallel or serial search) does
    the several steps: the Planner is for questions that need tools beyond search.
    """
    if assessment.complexity == "simple" and assessment.needs_external_info:
        return "executor"
    if assessment.complexity == "complex" and assessment.search_only and assessment.strategy != "direct":
        return "executor"
    return ROUTES[assessment.complexity]


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


def probe_note(probe: Probe | None) -> str:
    """What the document probe found, for the Master's prompt ("" when nothing was probed)."""
    if probe is None:
        return ""
    return (
        f'\nA search of them with this question found "{probe.title}" (similarity {probe.similarity:.2f}; '
        "from about 0.3 the documents are on its topic: search them rather than answer from memory)."
    )


def err_towards_evidence(reading: Reading, probe: Probe | None, settings: Settings) -> Reading:
    """A question the Master would answer from memory is searched when the documents cover it
    (``document_probe_similarity``) or, for a factual question, when the probe found anything on
    its topic (``document_probe_floor``): memory only when retrieval shows nothing relevant. Open
    questions (advice, plans) below the cover threshold keep the Master's choice."""
    if route_for(reading) != "writer_only" or probe is None:
        return reading
    covered = probe.similarity >= settings.document_probe_similarity
    on_topic = probe.similarity >= settings.document_probe_floor and not is_open_question(
        reading.resolved_query
    )
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


async def llm_reading(
    run: Run, state: SearchState, query: str, today: str, *, may_ask: bool = False, probe: Probe | None = None
) -> Reading:
    """The Master's LLM assessment (calibrated by rules; the rules alone if it gives nothing usable).

    ``may_ask``: the reply may name a question for the user (:class:`ClarifyingReply`); ``probe``:
    what a search of the documents with the question found, shown to the model.
    """
    history = format_history(state.get("messages", []))
    documents = searchable_documents(run.tools.running_specs().values()) + probe_note(probe)
    prompt = assess_prompt(today, history, query, documents, may_ask=may_ask)
    result = await structured_call(
        run.model("master"),
        [HumanMessage(content=prompt)],
        ClarifyingReply if may_ask else AssessmentReply,
        check=lambda reply: calibrate(reply, query),
        fallback=lambda errors: rule_assessment(query),
        constrain=run.settings.role("master").constrain_json,
    )
    reading = result.value
    reading.resolved_query = usable_resolution(reading.resolved_query, query)
    if not reading.facets:
        reading.facets = comparison_facets(reading.resolved_query) or [
            fact for fact in reading.facts_to_find if fact.strip()
        ]
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
        covered = reading.probe is not None and reading.probe.similarity >= threshold
        reading.search_only = covered and not needs_tools(reading.resolved_query)
        return err_towards_evidence(reading, reading.probe, run.settings)
    probe = await probe_documents(run, query) if threshold < 1 else None
    covered = probe is not None and probe.similarity >= threshold
    decision = await asyncio.to_thread(
        cheap_route,
        query,
        has_history=bool(state.get("messages")),
        covered=covered,
        classifier=_classifier(),
        follows_links=covered and probe is not None and link_tool(run, probe.tool) is not None,
        may_ask=may_ask,
    )
    if decision is not None:
        log.info("route decided by %s: %s", decision.decided_by, decision.why)
        reading = cheap_reading(decision, query, probe)
        reading.search_only = covered and not needs_tools(query)
        return reading
    reading = await llm_reading(run, state, query, today, may_ask=may_ask, probe=probe)
    if threshold < 1 and reading.resolved_query != query:  # a follow-up: probe what it means
        probe = await probe_documents(run, reading.resolved_query)
        covered = probe is not None and probe.similarity >= threshold
    reading.probe = probe
    reading.search_only = covered and not needs_tools(reading.resolved_query)
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
        return Command(goto=END, update={"answer": answer, "query": ""})
    query = prepared.text
    today = run.now().strftime("%A, %Y-%m-%d %H:%M %Z").strip()
    pending = state.get("clarification")
    clarified = pending is not None and pending["status"] == "answered"  # back from clarify
    cached = None if clarified or prepared.trim_note else await recall(run, state, query, today)
    if cached is not None:  # asked before: the earlier answer, before the team runs
        return Command(goto=END, update=cached)
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
        "candidate_tools": [],
        "plan": None,
        "plan_log": Overwrite([]),
        "results": Overwrite({}),
        "evidence": Overwrite({}),
        "discarded": Overwrite([]),
        "augmented": Overwrite([]),
        "missing": Overwrite([prepared.trim_note] if prepared.trim_note else []),
        "review": None,
        "next_query": None,
        "hops": None,
        "replans": 0,
        "waves": 0,
        "started_at": time.time(),
        "answer": None,
    }
    similarity = assessment.probe.similarity if assessment.probe is not None else None
    if lacks_the_web(run.tools, assessment.resolved_query or query, similarity, run.settings):
        log.info("not answered from memory: %r asks about the present and web search is off", query)
        answer = build_answer(NO_WEB_ANSWER, [], [NO_WEB_GAP])
        emit(AnswerEvent(event="answer", answer=answer))
        messages = [HumanMessage(content=query), AIMessage(content=answer["text"])]
        return Command(goto=END, update=update | {"answer": answer, "messages": messages})
    return Command(goto="writer" if route == "writer_only" else "select_tools", update=update)
