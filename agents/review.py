"""The Master's review after every wave: the next wave, a local re-plan, an augmentation, or the Writer.

Seed 001 §2 and §3.5: after each wave the Master checks status and completeness. A failed task →
local re-plan (its descendants with it); an incomplete one → the Planner augments the DAG; ready
tasks → the next wave; otherwise → the Writer. One refinement: a task that ran without a tool over
earlier results that all came back complete is read as it is when the executor calls it incomplete
(the Writer, a stronger model, reads the same inputs): augmenting can only add lookups of what was
already found, and on ``aisearch bench dag`` those augmentations cost 25–80 s each
(docs/results.md, 2026-11-29). Budgets (re-plans, waves, tool calls, wall clock) end every loop;
when one runs out the Writer answers with what exists and lists what is missing.
The node returns the decision and the next step together (``Command``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Literal, cast

from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field

from core.events import ReviewEvent, emit
from core.plan import Plan, Task, current_plan
from core.run import RunContext, current_run
from core.settings_groups import Budgets
from core.state import Decision, Review, SearchState, TaskResult, tool_calls_used

log = logging.getLogger(__name__)

NEXT_NODE: dict[str, Literal["dispatch", "plan", "writer"]] = {
    "dispatch": "dispatch",
    "replan": "plan",
    "augment": "plan",
    "write": "writer",
}


class Verdict(BaseModel):
    """The Master's decision after a wave, validated before it enters the state as a :class:`Review`."""

    decision: Decision
    reason: str
    failed: list[str] = Field(default_factory=list)
    incomplete: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    read_as_is: list[str] = Field(default_factory=list)  # incomplete, kept without augmenting

    def record(self) -> Review:
        """The verdict as the state's review record."""
        return cast(Review, self.model_dump(exclude={"read_as_is"}))


def over_complete_inputs(task: Task, results: Mapping[str, TaskResult]) -> bool:
    """Whether ``task`` ran tool-free (the executor model answered it, also where the plan had
    bound a calculator its inputs could not fill) and every result it reads came back complete:
    what it lacks, no new lookup would find."""
    return (
        results[task.id]["tool"] is None
        and bool(task.deps)
        and all(dep in results and results[dep]["status"] == "ok" for dep in task.deps)
    )


def decide(state: SearchState, budgets: Budgets, now: float | None = None) -> Verdict:
    """Review the plan's results: what the team does next, within the budgets."""
    now = time.time() if now is None else now
    plan = current_plan(state) or Plan()
    results = state.get("results", {})
    current = {task.id: results[task.id] for task in plan.tasks if task.id in results}
    augmented = set(state.get("augmented", []))
    failed = [tid for tid, result in current.items() if result["status"] == "failed"]
    unsettled = [tid for tid, r in current.items() if r["status"] == "incomplete" and tid not in augmented]
    tasks = plan.by_id()
    read_as_is = [tid for tid in unsettled if over_complete_inputs(tasks[tid], results)]
    incomplete = [tid for tid in unsettled if tid not in read_as_is]
    settled = augmented | set(read_as_is)
    done = plan.done(current, settled)
    pending = plan.ready(current, settled)
    unfinished = [task.id for task in plan.tasks if task.id not in done]

    def missing_for(ids: list[str]) -> list[str]:
        return [f"{tasks[tid].goal} ({current[tid].get('error') or current[tid]['status']})" for tid in ids]

    exhausted = []
    if now - state.get("started_at", now) > budgets.wall_clock_s:
        exhausted.append(f"the time budget of {budgets.wall_clock_s:g} s ran out")
    if tool_calls_used(state) >= budgets.max_tool_calls and pending:
        exhausted.append(f"the budget of {budgets.max_tool_calls} tool calls ran out")
    if state.get("waves", 0) >= budgets.max_waves and (pending or failed or incomplete):
        exhausted.append(f"the budget of {budgets.max_waves} waves ran out")
    if exhausted:
        not_run = [f"{tasks[tid].goal} (not run)" for tid in unfinished if tid not in current]
        return Verdict(
            decision="write",
            reason="; ".join(exhausted),
            failed=failed,
            incomplete=incomplete,
            missing=missing_for(failed + incomplete) + not_run,
        )
    replans_left = state.get("replans", 0) < budgets.max_replans
    if failed:
        if replans_left:
            return Verdict(decision="replan", reason=f"tasks {failed} failed", failed=failed)
        return Verdict(
            decision="write",
            reason=f"tasks {failed} failed and the re-plan budget ({budgets.max_replans}) is used up",
            failed=failed,
            incomplete=incomplete,
            missing=missing_for(failed + incomplete),
        )
    if incomplete and not pending:
        if replans_left:
            return Verdict(
                decision="augment",
                reason=f"tasks {incomplete} returned incomplete results",
                incomplete=incomplete,
            )
        return Verdict(
            decision="write",
            reason=f"tasks {incomplete} are incomplete and the re-plan budget is used up",
            incomplete=incomplete,
            missing=missing_for(incomplete),
        )
    as_is = f"; {read_as_is} incomplete over complete inputs, read as they are" if read_as_is else ""
    if pending:
        return Verdict(
            decision="dispatch",
            reason=f"{len(pending)} task(s) ready{as_is}",
            incomplete=incomplete,
            read_as_is=read_as_is,
        )
    return Verdict(
        decision="write", reason=f"all tasks completed{as_is}", incomplete=incomplete, read_as_is=read_as_is
    )


async def review(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["dispatch", "plan", "writer"]]:
    """Master review after a wave: record the decision and go where it leads."""
    run = await current_run(runtime)
    verdict = decide(state, run.settings.budgets)
    log.info("review: %s (%s)", verdict.decision, verdict.reason)
    record = verdict.record()
    emit(ReviewEvent(event="review", **record))
    update: dict[str, object] = {"review": record}
    if verdict.missing:
        update["missing"] = verdict.missing
    if verdict.read_as_is:  # their children may run, and no later review augments them
        update["augmented"] = verdict.read_as_is
    return Command(goto=NEXT_NODE[verdict.decision], update=update)
