"""Plan review: the run pauses after the Planner's first plan so a person can approve, edit or reject it.

Only with ``Settings.review_plan`` (off by default). The Planner (``agents/planner.py``) comes here
instead of ``dispatch`` with its first plan; re-plans and augmentations during the run, and the
Executor route's single task, are not reviewed. The node pauses with LangGraph's ``interrupt``
carrying the plan (``core.human.PlanReviewRequest``) and reads the reply it is resumed with:

- **approve**: the plan runs as it is;
- **edit**: the replacement plan is checked with :func:`core.plan.validate_plan` (schema, unique
  ids, declared dependencies, no cycle, tools among the candidates, at most ``max_tasks``, a task
  that needs an id another tool produces after that tool's task: ``agents/id_deps.py``) and runs
  as the next plan version (mode ``edit`` in the plan log). An invalid edit, or a reply the node
  cannot read, is **asked again**: the same request, the current plan unchanged, and ``error``
  listing every problem, so the person can fix the edit, approve the original or reject;
- **reject**: nothing runs; the turn ends with an answer that says the plan was rejected (and why).
"""

from __future__ import annotations

import logging
from typing import Any, Literal, cast

from langchain_core.messages import AIMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from agents.id_deps import needs_of, wire_id_dependencies
from agents.planner import publish
from agents.writer import build_answer
from core.events import AnswerEvent, emit
from core.human import PlanReviewRequest, ReplyError, read_plan_decision
from core.plan import Plan, PlanError, current_plan, validate_plan
from core.run import RunContext, current_run
from core.state import PlanData, SearchState, resolved_query

log = logging.getLogger(__name__)


def review_request(state: SearchState, plan: Plan, tools: list[str], error: str | None) -> PlanReviewRequest:
    """What the person is shown: the question, the plan and its waves, the tools it may use."""
    return PlanReviewRequest(
        kind="plan_review",
        query=resolved_query(state),
        plan=cast(PlanData, plan.model_dump()),
        waves=plan.waves(),
        tools=tools,
        error=error,
    )


def rejected(reason: str) -> dict[str, Any]:
    """The turn's end when the plan is rejected: an answer that says so, nothing run."""
    text = "The plan was rejected, so nothing was searched or run" + (f": {reason}." if reason else ".")
    answer = build_answer(text, [], [])
    emit(AnswerEvent(event="answer", answer=answer))
    return {"answer": answer, "messages": [AIMessage(content=text)]}


async def review_plan(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["dispatch", "__end__"]]:
    """Pause for the person's verdict on the plan; run it, run their edit, or end the turn."""
    run = await current_run(runtime)
    plan = current_plan(state) or Plan(tasks=[], version=0)
    tools = [tool["name"] for tool in state.get("candidate_tools", [])]
    error: str | None = None
    edited: Plan | None = None
    while True:
        reply = interrupt(review_request(state, plan, tools, error))
        try:
            decision = read_plan_decision(reply)
            if decision.action != "edit":
                break
            edited = validate_plan(
                decision.plan, candidate_tools=tools, max_tasks=run.settings.budgets.max_tasks
            )
            # an id another tool produces comes from that tool's task, as in the Planner's plans
            edited.tasks = wire_id_dependencies(edited.tasks, needs_of(state.get("candidate_tools", [])))
            break
        except ReplyError as exc:
            error = str(exc)
        except PlanError as exc:
            error = f"the edited plan is invalid: {exc}"
        log.info("plan review asks again: %s", error)
    if decision.action == "approve":
        log.info("plan v%d approved", plan.version)
        return Command(goto="dispatch")
    if decision.action == "reject":
        log.info("plan v%d rejected: %s", plan.version, decision.reason)
        return Command(goto=END, update=rejected(decision.reason.strip()))  # type: ignore[arg-type]  # langgraph types END as str
    assert edited is not None  # an edit leaves the loop only once its plan is valid
    edited.version = plan.version + 1
    return Command(goto="dispatch", update=publish(edited, "edit"))
