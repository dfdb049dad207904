"""The Master's LLM assessment: what the model writes, its prompt, and the calibrated reading.

Seed 001 §3.5: the Master classifies complexity (simple → Writer-only, moderate →
Executor-inclusive, complex → Planner-enhanced), names the SRSA search strategy (seed 002:
direct, parallel, serial), resolves follow-ups against the conversation and lists the facts to
find. The reply is decoded under its JSON schema with every field required, a short rationale
first (a small model that may skip it jumps to the verdict), each free-text field bounded: every
token the Master writes is waited for before anything else runs. Rules raise a verdict the model
under-calls (:func:`calibrate`); the rules alone stand in when the reply is unusable.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import cast

from langchain_core.messages import HumanMessage
from pydantic import BaseModel, Field

from agents.facets import comparison_facets
from core.run import Run
from core.settings import Settings
from core.state import Assessment, Complexity, Route, SearchState, Strategy
from core.text import format_history
from models.structured import structured_call
from prompts import render
from tools.hub import ToolSpec, query_argument
from tools.question_forms import COMPLEX_HINTS, EXTERNAL_HINTS

log = logging.getLogger(__name__)

ROUTES: dict[str, Route] = {"simple": "writer_only", "moderate": "executor", "complex": "planner"}
RATIONALE_CHARS = 160  # one short sentence (the 1.5B wrote ~250 characters unbounded)
FACT_CHARS = 100  # a fact to find is a phrase
MAX_FACTS = 4

MAX_DOCUMENTS_LINE = 300
CLARIFY_RULE = (
    '\nclarify: "" unless the question cannot be answered as asked; then one short question for the user '
    '(who "he" or "she" is when there is no conversation, which of several well-known things a name means, '
    "a missing place or time that changes the answer)."
)
CLARIFY_FIELD = ', "clarify": ""'


class AssessmentReply(BaseModel):
    """What the master model writes: a short rationale first, then the verdict.

    The lengths bound what constrained decoding lets the model write (they are not checked on a
    reply from an endpoint that does not constrain).
    """

    rationale: str = Field("", json_schema_extra={"maxLength": RATIONALE_CHARS})
    resolved_query: str = ""
    facts_to_find: list[str] = Field(
        default_factory=list,
        json_schema_extra={"maxItems": MAX_FACTS, "items": {"type": "string", "maxLength": FACT_CHARS}},
    )
    complexity: Complexity
    needs_external_info: bool = False
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


def probe_covers(similarity: float | None, settings: Settings) -> bool:
    """Whether the document probe's best passage (``similarity``; None: nothing probed) is close
    enough that the documents cover the question (``document_probe_similarity``)."""
    return similarity is not None and similarity >= settings.document_probe_similarity


def probe_on_topic(similarity: float | None, settings: Settings) -> bool:
    """Whether the document probe's best passage is on the question's topic, if not close
    (``document_probe_floor``)."""
    return similarity is not None and similarity >= settings.document_probe_floor


class Reading(AssessmentReply):
    """The Master's reading of a query, as recorded in the state.

    ``intent`` is what tool retrieval reads beside the query (the facts to find, or the query);
    ``needs_decomposition`` records a complex verdict's sub-questions.
    """

    intent: str = ""
    needs_decomposition: bool = False
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
        return cast(Assessment, self.model_dump(exclude={"clarify"}))


LEVELS: tuple[Complexity, ...] = ("simple", "moderate", "complex")


def finished(rationale: str) -> str:
    """The rationale as shown: one that decoding cut at its bound ends with an ellipsis."""
    text = " ".join(rationale.split())
    if len(text) >= RATIONALE_CHARS - 1 and not text.endswith((".", "!", "?", "…")):
        return text.rstrip(" ,;:") + "…"
    return text


def calibrate(reply: AssessmentReply, query: str) -> Reading:
    """Raise the model's complexity where the query's form or the model's own facts demand more.

    Small models under-call complexity: a 1.5B model labels "Who is elder, A or B, by how many
    years?" simple while listing two facts to find. The verdict is the highest of the model's
    label, the keyword rules and the facts it listed (two or more facts from outside → complex).
    """
    facts = [fact.strip() for fact in reply.facts_to_find if fact.strip()]
    assessment = Reading(
        **(reply.model_dump() | {"rationale": finished(reply.rationale)}),
        intent="; ".join(facts),
        needs_decomposition=reply.complexity == "complex",
    )
    votes = {"model": LEVELS.index(reply.complexity)}
    rule = rule_assessment(query)
    votes["rules"] = LEVELS.index(rule.complexity)
    several_facts = len(facts) >= 2
    votes["facts"] = 2 if several_facts and reply.needs_external_info else 0
    source, level = max(votes.items(), key=lambda item: item[1])
    if level > votes["model"]:
        assessment.complexity = LEVELS[level]
        assessment.escalated = source
        assessment.needs_external_info = True
        if level == 2:
            assessment.needs_decomposition = True
            if assessment.strategy == "direct":
                assessment.strategy = rule.strategy if source == "rules" else "parallel"
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
    complexity: Complexity
    strategy: Strategy
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


def probe_note(probe: Probe | None) -> str:
    """What the document probe found, for the Master's prompt ("" when nothing was probed)."""
    if probe is None:
        return ""
    return (
        f'\nA search of them with this question found "{probe.title}" (similarity {probe.similarity:.2f}; '
        "from about 0.3 the documents are on its topic: search them rather than answer from memory)."
    )


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
