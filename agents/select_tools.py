"""The ``select_tools`` node: the dynamic capability boundary for this query (seed 001 §3.3)."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agents.planner import single_task_plan
from agents.strategies import STRATEGY_NODES
from core.events import ToolsEvent, emit
from core.run import RunContext, current_run
from core.state import SearchState
from tools.hub import query_argument
from tools.selection import select_tools as rank_tools


async def select_tools(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["dispatch", "plan", "direct_search", "parallel_search", "serial_search"]]:
    """Retrieve a small candidate tool set, then go where the route and the top tool lead.

    On the Executor route a search tool runs the Master's SRSA strategy (``agents/strategies.py``);
    any other tool is bound to a single task and dispatched. The Planner route goes and plans.
    """
    run = await current_run(runtime)
    assessment = state.get("assessment", {})
    query = assessment.get("resolved_query") or state["query"]
    ranked = rank_tools(
        f"{query} {assessment.get('intent', '')}",
        list(run.tools.specs.values()),
        run.settings.tool_candidates,
    )
    candidates = [{**spec.brief(), "score": round(score, 3)} for spec, score in ranked]
    probe = assessment.get("probe") or {}
    on_topic = probe.get("similarity", 0.0) >= run.settings.document_probe_similarity
    probed = probe.get("tool") if on_topic else None
    if probed in run.tools.specs:  # the documents the Master found on topic are searched first
        rest = [c for c in candidates if c["name"] != probed]
        first = {**run.tools.specs[probed].brief(), "score": None}
        candidates = [first, *rest][: run.settings.tool_candidates]
    emit(ToolsEvent(event="tools", candidates=[c["name"] for c in candidates]))
    update: dict[str, Any] = {"candidate_tools": candidates}
    if state.get("route") != "executor":
        return Command(goto="plan", update=update)
    top = run.tools.specs.get(candidates[0]["name"]) if candidates else None
    if top is not None and query_argument(top):
        strategy = assessment.get("strategy") or "direct"
        return Command(goto=STRATEGY_NODES[strategy], update=update)
    update |= single_task_plan(query, candidates[0]["name"] if candidates else None)
    return Command(goto="dispatch", update=update)
