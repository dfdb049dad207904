"""The shared state of a search run, and the narrow payload each executor branch receives."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

Status = Literal["ok", "failed", "incomplete"]
Route = Literal["writer_only", "executor", "planner"]


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


class ToolCallRecord(TypedDict):
    """One call the executor made."""

    tool: str
    args: dict[str, Any]
    ok: bool
    output: str
    error: str | None
    ms: float


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


class InputState(TypedDict):
    """What a caller sends: the question of this turn."""

    query: str


class SearchState(TypedDict, total=False):
    """Everything the four agents share during one run (one conversation turn)."""

    messages: Annotated[list[AnyMessage], add_messages]
    query: str
    today: str
    assessment: dict[str, Any]
    route: Route
    candidate_tools: list[dict[str, Any]]
    plan: dict[str, Any] | None
    plan_log: Annotated[list[dict[str, Any]], extend_list]
    results: Annotated[dict[str, TaskResult], merge_dicts]
    evidence: Annotated[dict[str, Evidence], merge_dicts]
    discarded: Annotated[list[TaskResult], extend_list]
    augmented: Annotated[list[str], extend_list]
    review: dict[str, Any]
    replans: int
    waves: int
    started_at: float
    missing: Annotated[list[str], extend_list]
    answer: dict[str, Any] | None


class OutputState(TypedDict, total=False):
    """What a caller gets back."""

    query: str
    route: Route
    assessment: dict[str, Any]
    plan: dict[str, Any] | None
    results: dict[str, TaskResult]
    evidence: dict[str, Evidence]
    answer: dict[str, Any] | None
    missing: list[str]


def tool_calls_used(state: SearchState) -> int:
    """Tool calls made this turn, kept and discarded results alike."""
    results = [*state.get("results", {}).values(), *state.get("discarded", [])]
    return sum(len(result["tool_calls"]) for result in results)


class TaskPayload(TypedDict):
    """The narrow input of one ``execute_task`` branch (sent with ``Send``)."""

    task: dict[str, Any]
    parent_outputs: dict[str, str]
    query: str
    today: str
    plan_version: int
    tool_calls_left: int
    deadline: NotRequired[float]
