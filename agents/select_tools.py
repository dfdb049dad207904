"""The ``select_tools`` node: the dynamic capability boundary for this query (seed 001 §3.3).

Candidates come from catalogue retrieval over every server the run may start
(``tools/candidates.py``); the servers of the candidates begin starting at once, in the background,
while the Planner plans (``tools/hub.py``): no other server is started.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agents.assessment import probe_covers
from agents.planner import single_task_plan
from agents.router import needs_tools
from agents.strategies import STRATEGY_NODES
from core.events import ToolsEvent, emit
from core.run import RunContext, current_run
from core.state import SearchState
from tools.candidates import candidate
from tools.hub import query_argument
from tools.registry import WEBSEARCH

WEB_SEARCH_TOOL = f"{WEBSEARCH}.search"


def retrieval_query(query: str, intent: str) -> str:
    """The text to retrieve tools for: the query, and the Master's intent as a clause of its own."""
    intent = intent.strip()
    if not intent or intent.lower() in query.lower():
        return query
    return f"{query.rstrip(' .?!')}. {intent}"


async def select_tools(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["dispatch", "plan", "direct_search", "parallel_search", "split_question"]]:
    """Retrieve a small candidate tool set, then go where the route and the top tool lead.

    On the Executor route a search tool runs the Master's SRSA strategy (``agents/strategies.py``);
    any other tool (one that needs no identifier from another) is bound to a single task and
    dispatched. The Planner route goes and plans. The documents the probe found come first when
    they cover the question (unless it needs a calculation or a live fact), when the Master sent it
    to them rather than to memory, or when it read that searching them is enough (a "when…"
    question otherwise binds the clock its wording matches).
    """
    run = await current_run(runtime)
    assessment = state.get("assessment", {})
    query = assessment.get("resolved_query") or state["query"]
    k = run.settings.tool_candidates
    selection = await run.tool_candidates().aselect(retrieval_query(query, assessment.get("intent") or ""), k)
    candidates = selection.candidates
    specs = run.tools.specs
    probe = assessment.get("probe")
    on_topic = probe_covers(probe.get("similarity") if probe else None, run.settings)
    # the Master's floor (not memory), or its reading that searching the documents is enough
    sent_to_documents = assessment.get("escalated") == "documents" or bool(assessment.get("search_only"))
    # a calculation or a live fact binds its own tool, however near the documents' topic it is
    # (the standard library's calendar pages are, to "how many days between …")
    computes = state.get("route") == "executor" and needs_tools(query)
    probed = probe.get("tool") if probe and ((on_topic and not computes) or sent_to_documents) else None
    if assessment.get("web"):  # a live or recent fact, or one the documents do not hold
        probed = WEB_SEARCH_TOOL
    if probed in specs:  # the documents the Master found on topic (or the web) are searched first
        rest = [c for c in candidates if c["name"] != probed]
        candidates = [candidate(specs[probed], list(specs.values()), None), *rest][: max(k, len(candidates))]
    run.tools.prestart(dict.fromkeys(c["server"] for c in candidates if c["name"] in specs))
    emit(ToolsEvent(event="tools", candidates=[c["name"] for c in candidates]))
    update: dict[str, Any] = {"candidate_tools": candidates}
    if state.get("route") != "executor":
        return Command(goto="plan", update=update)
    top = specs.get(candidates[0]["name"]) if candidates else None
    if top is not None and query_argument(top):
        strategy = assessment.get("strategy") or "direct"
        return Command(goto=STRATEGY_NODES[strategy], update=update)
    usable = [c["name"] for c in candidates if not c.get("needs")]
    update |= single_task_plan(query, usable[0] if usable else None)
    return Command(goto="dispatch", update=update)
