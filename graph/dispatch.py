"""Dispatch: every ready task of the plan becomes its own ``Send`` branch (the DAG scheduler).

``budgets.max_parallel`` caps the tasks sent at once. With ``max_parallel = 1`` the plan runs
strictly one task at a time (each wave is a single task): the sequential baseline that
``aisearch bench dag`` measures the wave-parallel schedule against.
"""

from __future__ import annotations

import time
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from core.plan import Plan, current_plan, task_payload
from core.run import RunContext, current_run
from core.state import SearchState, read_passages, tool_calls_used


async def dispatch(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["execute_task", "writer"]]:
    """Send the next wave: ready tasks (all parents ok), parents' outputs filled into their args.

    At most ``max_parallel`` tasks go out at once; the rest wait for the next wave.
    """
    run = await current_run(runtime)
    budgets = run.settings.budgets
    plan = current_plan(state) or Plan()
    results = state.get("results", {})
    wave = plan.ready(results, state.get("augmented", []))[: budgets.max_parallel]
    if not wave:
        return Command(goto="writer", update={"missing": ["no task could be scheduled"]})
    outputs = {tid: r["output"] for tid, r in results.items()}
    calls_left = max(budgets.max_tool_calls - tool_calls_used(state), 0)
    deadline = state.get("started_at", time.time()) + budgets.wall_clock_s
    sends = [
        Send(
            "execute_task",
            task_payload(
                task,
                outputs,
                query=state["query"],
                today=state.get("today", ""),
                plan_version=plan.version,
                tool_calls_left=max(calls_left // len(wave), 1) if calls_left else 0,
                deadline=deadline,
                candidates=[tool["name"] for tool in state.get("candidate_tools", [])],
                goals={tid: r["goal"] for tid, r in results.items()},
                passages=read_passages(results, state.get("evidence", {})),
            ),
        )
        for task in wave
    ]
    return Command(goto=sends, update={"waves": state.get("waves", 0) + 1})
