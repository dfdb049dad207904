"""One question through the graph, timed: wall seconds and time to the Writer's first token."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from core.run import Run, RunContext
from core.state import InputState
from graph.builder import build_graph


async def timed_run(run: Run, query: str, thread_id: str) -> tuple[dict[str, Any], float, float | None]:
    """Run ``query`` on a fresh in-memory thread; return the final state, the seconds it took and
    the seconds until the Writer streamed its first token (None if it streamed nothing)."""
    graph = build_graph(checkpointer=InMemorySaver())
    config = RunnableConfig(configurable={"thread_id": thread_id}, recursion_limit=200)
    start = time.perf_counter()
    first_token = None
    context = RunContext(run=run)
    # langgraph types the v1 stream's items as dicts; with a list of modes they are (mode, chunk) pairs
    stream: AsyncIterator[tuple[str, Any]] = graph.astream(  # type: ignore[assignment]
        InputState(query=query), config, context=context, stream_mode=["messages", "custom"]
    )
    async for mode, chunk in stream:
        if mode == "messages" and chunk[1].get("langgraph_node") == "writer" and first_token is None:
            first_token = time.perf_counter() - start
    seconds = time.perf_counter() - start
    return (await graph.aget_state(config)).values, seconds, first_token
