"""The Master's review after every wave: the next wave, a local re-plan, an augmentation, or the Writer.

Seed 001 §2 and §3.5: after each wave the Master checks status and completeness. A failed task →
local re-plan (its descendants with it); an incomplete one → the Planner augments the DAG; ready
tasks → the next wave; otherwise → the Writer. Budgets (re-plans, waves, tool calls, wall clock)
end every loop; when one runs out the Writer answers with what exists and lists what is missing.
The node returns the decision and the next step together (``Command``).
"""

from __future__ import annotations

import logging
import time
from typing import Literal, cast

from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field

from core.events import ReviewEvent, emit
from core.plan import Plan, current_plan
from core.run import RunContext, current_run
from core.settings_groups import Budgets
from core.state import Decision, Review, SearchState, tool_calls_used

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

    def record(self) -> Review:
        """The verdict as the state's review record."""
        return cast(Review, self.model_dump())


def decide(state: SearchState, budgets: Budgets, now: float | None = None) -> Verdict:
    """Review the plan's results: what the team does next, within the budgets."""
    now = time.time() if now is None else now
    plan = current_plan(state) or Plan()
    results = state.get("results", {})
    current = {task.id: results[task.id] for task in plan.tasks if task.id in results}
    augmented = set(state.get("augmented", []))
    failed = [tid for tid, result in current.items() if result["status"] == "failed"]
    incomplete = [tid for tid, r in current.items() if r["status"] == "incomplete" and tid not in augmented]
    done = plan.done(current, augmented)
    pending = plan.ready(current, augmented)
    unfinished = [task.id for task in plan.tasks if task.id not in done]

    def missing_for(ids: list[str]) -> list[str]:
        goals = plan.by_id()
        return [f"{goals[tid].goal} ({current[tid].get('error') or current[tid]['status']})" for tid in ids]

    exhausted = []
    if now - state.get("started_at", now) > budgets.wall_clock_s:
        exhausted.append(f"the time budget of {budgets.wall_clock_s:g} s ran out")
    if tool_calls_used(state) >= budgets.max_tool_calls and pending:
        exhausted.append(f"the budget of {budgets.max_tool_calls} tool calls ran out")
    if state.get("waves", 0) >= budgets.max_waves and (pending or failed or incomplete):
        exhausted.append(f"the budget of {budgets.max_waves} waves ran out")
    if exhausted:
        not_run = [f"{plan.by_id()[tid].goal} (not run)" for tid in unfinished if tid not in current]
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
    if pending:
        return Verdict(decision="dispatch", reason=f"{len(pending)} task(s) ready", incomplete=incomplete)
    return Verdict(decision="write", reason="all tasks completed", incomplete=incomplete)


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
    return Command(goto=NEXT_NODE[verdict.decision], update=update)
