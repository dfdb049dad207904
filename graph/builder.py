"""The graph: Master → (Writer | Executor | Planner) → waves of tasks → Master review → Writer.

```
START → master ─┬─ writer_only ───────────────────────────────────────→ writer → END
                ├─ executor ─→ select_tools ─→ dispatch ⇉ execute_task ⇉ review ─┬→ dispatch
                └─ planner ──→ select_tools ─→ plan ─→ dispatch                    ├→ plan (re-plan / augment)
                                                                                   └→ writer
```
"""

from __future__ import annotations

from typing import Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from agents.executor import execute_task
from agents.master import assess, review
from agents.planner import plan
from agents.select_tools import select_tools
from agents.writer import write
from core.state import InputState, OutputState, SearchState
from graph.dispatch import dispatch

GRAPH_NAME = "aisearch"


def after_master(state: SearchState) -> Literal["writer", "select_tools"]:
    """Writer-only queries skip the tools; the other two configurations select tools first."""
    return "writer" if state["route"] == "writer_only" else "select_tools"


def after_select(state: SearchState) -> Literal["dispatch", "plan"]:
    """The Executor route already has its single task; the Planner route plans."""
    return "dispatch" if state["route"] == "executor" else "plan"


def after_review(state: SearchState) -> Literal["dispatch", "plan", "writer"]:
    """Follow the Master's review: next wave, re-plan / augment, or write."""
    decision = state["review"]["decision"]
    if decision in {"replan", "augment"}:
        return "plan"
    return "dispatch" if decision == "dispatch" else "writer"


def build_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """Compile the search graph, with a checkpointer for the CLI and tests or none for Studio."""
    builder = StateGraph(SearchState, input_schema=InputState, output_schema=OutputState)
    builder.add_node("master", assess)
    builder.add_node("select_tools", select_tools)
    builder.add_node("plan", plan)
    builder.add_node("dispatch", dispatch, destinations=("execute_task", "writer"))
    builder.add_node("execute_task", execute_task)
    builder.add_node("review", review)
    builder.add_node("writer", write)
    builder.add_edge(START, "master")
    builder.add_conditional_edges("master", after_master)
    builder.add_conditional_edges("select_tools", after_select)
    builder.add_edge("plan", "dispatch")
    builder.add_edge("execute_task", "review")
    builder.add_conditional_edges("review", after_review)
    builder.add_edge("writer", END)
    return builder.compile(checkpointer=checkpointer, name=GRAPH_NAME)


graph = build_graph()
