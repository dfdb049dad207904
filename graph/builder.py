"""The graph: Master → (Writer | Executor | Planner) → waves of tasks → Master review → Writer.

```
START → master ─┬─ writer_only ───────────────────────────────────────→ writer → END
                ├─ executor ─→ select_tools ─┬─ direct_search ───────────────────→ writer
                │  (a search tool: the SRSA  ├─ parallel_search ⇉ search_branch ⇉ writer
                │   strategy)                └─ split_question ─┬─ hop ⟲ (a chain, hop by hop) → writer
                │                                                └─ serial_search ⇄ next_hop → writer
                ├─ executor ─→ select_tools ─→ dispatch ⇉ execute_task ⇉ review ─┬→ dispatch
                └─ planner ──→ select_tools ─→ plan ─→ dispatch                    ├→ plan (re-plan / augment)
                                                                                   └→ writer
```

Two pauses for a person, off unless the run turns them on (``core/human.py``): ``master ⇄ clarify``
(an ambiguous question: ``interrupt`` with the Master's question, the answer folded into the
query) and ``plan → review_plan → dispatch`` (the first plan approved, edited or rejected).

The deciding nodes (``master``, ``select_tools``, ``plan``, ``review``, ``dispatch``) return
``Command[Literal[...]]``: the update and the next step sit together, and the annotation tells
LangGraph (and Studio's drawing) where each may go. Only the fixed edges are added here. The
per-run objects (models, tool hub, clock) come in as the run context (``core/run.py``).
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from agents.clarify import clarify
from agents.executor import execute_task
from agents.hop_chain import hop, split_question
from agents.master import assess
from agents.plan_review import review_plan
from agents.planner import plan
from agents.review import review
from agents.select_tools import select_tools
from agents.strategies import direct_search, next_hop, parallel_search, search_branch, serial_search
from agents.writer import write
from core.run import RunContext
from core.state import InputState, OutputState, SearchState, TaskPayload
from graph.dispatch import dispatch

GRAPH_NAME = "aisearch"
SearchGraph = CompiledStateGraph[SearchState, RunContext, InputState, OutputState]


def build_graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> SearchGraph:
    """Compile the search graph, with a checkpointer for the CLI and tests or none for Studio."""
    builder = StateGraph(
        SearchState, context_schema=RunContext, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("master", assess)
    builder.add_node("clarify", clarify)
    builder.add_node("select_tools", select_tools)
    builder.add_node("plan", plan)
    builder.add_node("review_plan", review_plan)
    builder.add_node("dispatch", dispatch)
    builder.add_node("execute_task", execute_task, input_schema=TaskPayload)
    builder.add_node("review", review)
    builder.add_node("direct_search", direct_search)
    builder.add_node("parallel_search", parallel_search)
    builder.add_node("search_branch", search_branch, input_schema=TaskPayload)
    builder.add_node("serial_search", serial_search)
    builder.add_node("next_hop", next_hop)
    builder.add_node("split_question", split_question)
    builder.add_node("hop", hop)
    builder.add_node("writer", write)
    builder.add_edge(START, "master")
    builder.add_edge("execute_task", "review")
    builder.add_edge("search_branch", "writer")
    builder.add_edge("writer", END)
    return builder.compile(checkpointer=checkpointer, name=GRAPH_NAME)


graph = build_graph()
