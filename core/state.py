"""The shared state of a search run, its typed records, and the narrow payload of an executor branch.

Every record in the state is a ``TypedDict`` (plain data: checkpoints, ``--json`` and Studio show it
as is), written once by the node that owns it after validation there: the assessment by the
Master (``agents/master.py``), the plan by the Planner (``core/plan.py`` validates it), the review
by ``agents/review.py``, task results by the Executor, the answer by the Writer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.types import Overwrite
from typing_extensions import TypedDict  # pydantic builds schemas of these on Python 3.11 too

from tools.hub import CandidateTool as CandidateTool  # re-exported: the state keeps the candidates
from tools.hub import ToolOutcome

Status = Literal["ok", "failed", "incomplete"]
Route = Literal["writer_only", "executor", "planner"]
Complexity = Literal["simple", "moderate", "complex"]
Strategy = Literal["direct", "parallel", "serial"]
Decision = Literal["dispatch", "replan", "augment", "write"]
DecidedBy = Literal["rules", "classifier", "probe", "llm", "fallback"]
PlanMode = Literal["plan", "single", "replan", "augment", "edit"]
ClarificationStatus = Literal["asked", "answered", "used"]


def merge_dicts(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer for per-task results and evidence: later writes win key by key."""
    return {**(left or {}), **(right or {})}


def extend_list(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Reducer that appends."""
    return [*(left or []), *(right or [])]


class Evidence(TypedDict):
    """A citable source: a tool output, a retrieved passage, or the model's own knowledge."""

    id: str
    kind: Literal["tool", "document", "model"]
    title: str
    source: str
    content: str
    task_id: str
    published: NotRequired[str]  # the day a web page was published (YYYY-MM-DD), when its source says


class ToolCallRecord(TypedDict):
    """One call the executor made."""

    tool: str
    args: dict[str, Any]
    ok: bool
    output: str
    error: str | None
    ms: float
    cached: NotRequired[bool]  # answered from the tool-call cache (tools/cache/tool_calls.py)


class ToolSwitch(TypedDict):
    """The Executor switched from a failed tool to a backup of its toolkit, or from the bound tool
    to the one its arguments fit (``agents/executor_rebind.py``)."""

    from_tool: str
    to_tool: str
    reason: str
    args: dict[str, Any]
    mapped_by: Literal["name", "model"]


class TaskResult(TypedDict):
    """What one executed task produced."""

    task_id: str
    goal: str
    tool: str | None
    status: Status
    output: str
    error: str | None
    evidence_ids: list[str]
    tool_calls: list[ToolCallRecord]
    started_at: float
    finished_at: float
    plan_version: int
    switches: NotRequired[list[ToolSwitch]]  # backups the Executor switched to, in order
    compared: NotRequired[ComparedRecord]  # a comparison the task settled over its parents' lookups


class DocumentProbe(TypedDict):
    """The best passage a quick search of the local documents found for the question."""

    tool: str
    similarity: float
    title: str


class Assessment(TypedDict):
    """The Master's reading of a query."""

    rationale: str
    resolved_query: str
    intent: str
    facts_to_find: list[str]
    complexity: Complexity
    needs_external_info: bool
    needs_decomposition: bool
    strategy: Strategy
    facets: list[str]
    decided_by: DecidedBy
    search_only: bool
    fallback: bool
    escalated: str | None
    probe: DocumentProbe | None
    web: NotRequired[bool]  # searched on the web first (agents/web_route.py)


class Clarification(TypedDict):
    """A question the Master asked about an ambiguous query, and the person's answer.

    ``status``: ``asked`` (the run is paused on it), ``answered`` (folded into ``query``, the Master
    reads the query again), ``used`` (the turn went on with the clarified query).
    """

    question: str
    asked_query: str
    answer: str
    status: ClarificationStatus


class TaskData(TypedDict):
    """One task of the plan (``core.plan.Task`` as data)."""

    id: str
    goal: str
    tool: str | None
    args: dict[str, Any]
    deps: list[str]
    returns: str


class PlanData(TypedDict):
    """The plan (``core.plan.Plan`` as data); ``version`` grows with every re-plan."""

    tasks: list[TaskData]
    version: int


class PlanEntry(TypedDict):
    """One version of the plan in the plan log: how it was made and what it replaced."""

    version: int
    mode: PlanMode
    tasks: list[TaskData]
    dropped: list[str]
    fallback: bool
    errors: list[str]


class Review(TypedDict):
    """The Master's decision after a wave."""

    decision: Decision
    reason: str
    failed: list[str]
    incomplete: list[str]
    missing: list[str]


class Citation(TypedDict):
    """A ``[n]`` of the answer, mapped to the evidence it cites."""

    n: int
    evidence_id: str
    kind: str
    title: str
    source: str


class Source(TypedDict):
    """A numbered source the Writer was shown."""

    n: int
    id: str
    kind: str
    title: str
    source: str
    published: NotRequired[str]  # a web page's day of publication, when its source gives one


class ComparedRecord(TypedDict):
    """A comparison read one entity at a time (``agents/compare.py``): its form, what each entity's
    reading found, and the answer they settled (None when the Writer read the question whole)."""

    form: str
    facts: dict[str, str]
    settled: str | None


class ChainStep(TypedDict):
    """One hop of a chain as the answer records it."""

    question: str
    answer: str
    status: str
    titles: list[str]
    evidence_ids: list[str]  # the passages it read (keys of the run's evidence), in order


class CachedRecord(TypedDict):
    """Where a cached answer came from (``agents/recall.py``): the earlier question it answered,
    how similar it is, how old the answer is, and how long the team took to write it."""

    query: str
    similarity: float
    age_s: float
    saved_s: float


class Answer(TypedDict):
    """The Writer's answer: short answer, cited text, citations, sources and what is missing."""

    short: str
    text: str
    citations: list[Citation]
    sources: list[Source]
    basis: Literal["sources", "model_knowledge"]
    model_knowledge_citations: list[int]
    uncited_sentences: list[str]
    invalid_citations: list[int]
    missing: list[str]
    attributed_citations: NotRequired[list[dict[str, Any]]]
    dropped_citations: NotRequired[list[dict[str, Any]]]
    plan_version: NotRequired[int | None]
    compared: NotRequired[ComparedRecord]
    chain: NotRequired[list[ChainStep]]  # a hop chain's questions, answers, statuses and passages
    length: NotRequired[Literal["brief", "full"]]  # a factoid's few words, or an open question's full answer
    cached: NotRequired[CachedRecord]  # served from the semantic answer cache, not written this turn


@dataclass
class TaskOutcome:
    """What an executor loop returns for one task, before it becomes a :class:`TaskResult`."""

    status: Status
    output: str = ""
    error: str | None = None
    calls: list[ToolOutcome] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    switches: list[ToolSwitch] = field(default_factory=list)
    compared: ComparedRecord | None = None  # the comparison it settled, for the Writer


class HopRecord(TypedDict):
    """One hop of a chain (``agents/hop_chain.py``): its question as split (``#n`` for earlier
    answers), as searched, its answer and the search task that found it."""

    step: str
    query: str
    answer: str
    task_id: str
    status: Literal["pending", "answered", "unanswered"]
    remark: NotRequired[bool]  # marked again for a describing phrase before it is searched
    context: NotRequired[str]  # searched beside the hop's question (the words its phrase lost)


class InputState(TypedDict):
    """What a caller sends: the question of this turn."""

    query: str


class SearchState(TypedDict, total=False):
    """Everything the four agents share during one run (one conversation turn)."""

    messages: Annotated[list[AnyMessage], add_messages]
    query: str
    today: str
    assessment: Assessment
    clarification: Clarification | None
    route: Route
    candidate_tools: list[CandidateTool]
    plan: PlanData | None
    plan_log: Annotated[list[PlanEntry], extend_list]
    results: Annotated[dict[str, TaskResult], merge_dicts]
    evidence: Annotated[dict[str, Evidence], merge_dicts]
    discarded: Annotated[list[TaskResult], extend_list]
    augmented: Annotated[list[str], extend_list]
    review: Review | None
    next_query: str | None
    hops: list[HopRecord] | None
    replans: int
    waves: int
    started_at: float
    missing: Annotated[list[str], extend_list]
    answer: Answer | None


class OutputState(TypedDict, total=False):
    """What a caller gets back."""

    query: str
    route: Route
    assessment: Assessment
    clarification: Clarification | None
    plan: PlanData | None
    results: dict[str, TaskResult]
    evidence: dict[str, Evidence]
    answer: Answer | None
    missing: list[str]


def turn_start(
    *, evidence: dict[str, Evidence] | None = None, missing: list[str] | None = None
) -> dict[str, Any]:
    """The per-turn fields of a new turn, cleared (the conversation's messages stay): no plan, no
    results, no evidence but ``evidence``, no notes but ``missing``, the turn's clock started now."""
    return {
        "candidate_tools": [],
        "plan": None,
        "plan_log": Overwrite([]),  # replaces what the reducer holds
        "results": Overwrite({}),
        "evidence": Overwrite(evidence or {}),
        "discarded": Overwrite([]),
        "augmented": Overwrite([]),
        "missing": Overwrite(missing or []),
        "review": None,
        "next_query": None,
        "hops": None,
        "replans": 0,
        "waves": 0,
        "started_at": time.time(),
    }


def resolved_query(state: SearchState) -> str:
    """The query as the Master resolved it (earlier turns' references filled in), else as asked."""
    assessment = state.get("assessment")
    return (assessment.get("resolved_query") if assessment else None) or state.get("query", "")


def read_passages(results: dict[str, TaskResult], evidence: dict[str, Evidence]) -> dict[str, list[Evidence]]:
    """The passages each finished task read (its document evidence), by task id; a task that read
    none (a tool's value, the model's answer) is left out."""
    read: dict[str, list[Evidence]] = {}
    for tid, result in results.items():
        items = [evidence[eid] for eid in result["evidence_ids"] if eid in evidence]
        if items and all(item["kind"] == "document" for item in items):
            read[tid] = items
    return read


def task_evidence_ids(state: SearchState, task_id: str) -> list[str]:
    """The evidence ids of a task's result (none when the task has no result yet)."""
    result = state.get("results", {}).get(task_id)
    return result.get("evidence_ids", []) if result else []


def tool_calls_used(state: SearchState) -> int:
    """Tool calls made this turn, kept and discarded results alike."""
    results = [*state.get("results", {}).values(), *state.get("discarded", [])]
    return sum(len(result["tool_calls"]) for result in results)


class TaskPayload(TypedDict):
    """The narrow input of one ``execute_task`` branch (sent with ``Send``)."""

    task: TaskData
    parent_outputs: dict[str, str]
    query: str
    today: str
    plan_version: int
    tool_calls_left: int
    deadline: NotRequired[float]
    candidates: NotRequired[list[str]]  # the run's candidate tools: a call's arguments may fit one
    parent_goals: NotRequired[dict[str, str]]  # what each parent task looked for, by id
    parent_passages: NotRequired[dict[str, list[Evidence]]]  # the passages each parent read, by id
