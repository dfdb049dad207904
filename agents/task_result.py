"""A task's end, written once for every kind of task (an executor task, a strategy's search): its
tool calls as records, its ``TaskResult``, the ``task_end`` event and the state update."""

from __future__ import annotations

import logging
import time
from typing import Any

from core.events import TaskEndEvent, emit
from core.plan import Task
from core.state import TaskOutcome, TaskResult, ToolCallRecord
from tools.hub import ToolOutcome

log = logging.getLogger(__name__)


def call_record(outcome: ToolOutcome) -> ToolCallRecord:
    """One tool call as the task result keeps it (its output cut to 2,000 characters)."""
    record = ToolCallRecord(
        tool=outcome.tool,
        args=outcome.args,
        ok=outcome.ok,
        output=outcome.output[:2000],
        error=outcome.error,
        ms=outcome.ms,
    )
    if outcome.cached:
        record["cached"] = True
    return record


def finish_task(task: Task, outcome: TaskOutcome, *, started: float, plan_version: int) -> dict[str, Any]:
    """The task's result and passages as a state update, after its ``task_end`` event."""
    status, output, error, evidence = outcome.status, outcome.output, outcome.error, outcome.evidence
    finished = time.time()
    result = TaskResult(
        task_id=task.id,
        goal=task.goal,
        tool=task.tool,
        status=status,
        output=output,
        error=error,
        evidence_ids=[item["id"] for item in evidence],
        tool_calls=[call_record(call) for call in outcome.calls],
        started_at=started,
        finished_at=finished,
        plan_version=plan_version,
    )
    if outcome.switches:
        result["switches"] = outcome.switches
    if outcome.compared is not None:
        result["compared"] = outcome.compared
    emit(
        TaskEndEvent(
            event="task_end",
            task_id=task.id,
            status=status,
            tool=task.tool,
            seconds=round(finished - started, 2),
            error=error,
            output=output[:200],
        )
    )
    log.info("task %s %s in %.2fs", task.id, status, finished - started)
    return {"results": {task.id: result}, "evidence": {item["id"]: item for item in evidence}}
