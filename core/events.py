"""The progress events the nodes write to LangGraph's ``custom`` stream, one type per kind.

The agents emit them (:func:`emit`); the CLI renders them (``app/render.py``); anything reading
``stream_mode="custom"`` gets these dicts.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from langgraph.config import get_stream_writer

from core.state import Answer, Assessment, CachedRecord, PlanEntry, Route, Status


class RouteEvent(TypedDict):
    """The Master chose the team."""

    event: Literal["route"]
    route: Route
    assessment: Assessment


class ToolsEvent(TypedDict):
    """The candidate tools of this query."""

    event: Literal["tools"]
    candidates: list[str]


class PlanEvent(PlanEntry):
    """A new version of the plan, with its waves (tasks in one wave run in parallel)."""

    event: Literal["plan"]
    waves: list[list[str]]


class TaskStartEvent(TypedDict):
    """A task's branch started."""

    event: Literal["task_start"]
    task_id: str
    goal: str
    tool: str | None
    at: float


class TaskEndEvent(TypedDict):
    """A task's branch finished."""

    event: Literal["task_end"]
    task_id: str
    status: Status
    tool: str | None
    seconds: float
    error: str | None
    output: str


class ToolSwitchEvent(TypedDict):
    """A task's tool failed and the Executor switched to a backup of the same toolkit, or the call's
    arguments fit another tool than the bound one and went there."""

    event: Literal["tool_switch"]
    task_id: str
    from_tool: str
    to_tool: str
    reason: str
    args: dict[str, Any]
    mapped_by: Literal["name", "model"]


class ReviewEvent(TypedDict):
    """The Master's review after a wave."""

    event: Literal["review"]
    decision: str
    reason: str
    failed: list[str]
    incomplete: list[str]
    missing: list[str]


class CacheEvent(CachedRecord):
    """The answer came from the semantic answer cache: an earlier question's, asked again or reworded."""

    event: Literal["cache"]


class AnswerEvent(TypedDict):
    """The Writer's answer, with checked citations."""

    event: Literal["answer"]
    answer: Answer


Event = (
    RouteEvent
    | ToolsEvent
    | PlanEvent
    | TaskStartEvent
    | TaskEndEvent
    | ToolSwitchEvent
    | ReviewEvent
    | CacheEvent
    | AnswerEvent
)


def emit(event: Event) -> None:
    """Write ``event`` to the running graph's ``custom`` stream."""
    get_stream_writer()(event)
