"""The ``select_tools`` node: the dynamic capability boundary for this query (seed 001 §3.3)."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.config import get_stream_writer
from langgraph.types import Command

from agents.planner import single_task_plan
from core.run import current_resources
from core.state import SearchState
from tools.selection import select_tools as rank_tools


async def select_tools(state: SearchState) -> Command[Literal["dispatch", "plan"]]:
    """Retrieve a small candidate tool set; on the Executor route, bind the top one to a single task
    and dispatch it, on the Planner route go and plan."""
    resources = await current_resources()
    assessment = state.get("assessment", {})
    query = assessment.get("resolved_query") or state["query"]
    ranked = rank_tools(
        f"{query} {assessment.get('intent', '')}",
        list(resources.tools.specs.values()),
        resources.settings.tool_candidates,
    )
    candidates = [{**spec.brief(), "score": round(score, 3)} for spec, score in ranked]
    probe = assessment.get("probe") or {}
    on_topic = probe.get("similarity", 0.0) >= resources.settings.document_probe_similarity
    probed = probe.get("tool") if on_topic else None
    if probed in resources.tools.specs:  # the documents the Master found on topic are searched first
        rest = [c for c in candidates if c["name"] != probed]
        first = {**resources.tools.specs[probed].brief(), "score": None}
        candidates = [first, *rest][: resources.settings.tool_candidates]
    get_stream_writer()({"event": "tools", "candidates": [c["name"] for c in candidates]})
    update: dict[str, Any] = {"candidate_tools": candidates}
    if state.get("route") != "executor":
        return Command(goto="plan", update=update)
    update |= single_task_plan(query, candidates[0]["name"] if candidates else None)
    return Command(goto="dispatch", update=update)
