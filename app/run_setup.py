"""What every entry point that runs the graph on threads shares: the checkpointer, a thread's
configuration, and the run's stream reduced to progress events and answer tokens.

The CLI's ``ask`` (``app/cli.py``) and the HTTP app (``app/http_api.py``) both use these, so a
thread started on one can be continued on the other against the same database.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessageChunk
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph

from core.events import Event
from core.run import RunContext
from core.settings import Settings

RECURSION_LIMIT = 200
"""Supersteps one turn may take: well above what the budgets allow, so the budgets end every loop."""


@asynccontextmanager
async def open_checkpointer(settings: Settings) -> AsyncIterator[BaseCheckpointSaver]:
    """The thread store of ``settings``: the SQLite database at ``settings.db_path`` (created if missing)."""
    settings.db_path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(settings.db_path)) as saver:
        yield saver


def new_thread_id() -> str:
    """A fresh thread id (12 hex digits)."""
    return uuid.uuid4().hex[:12]


def thread_config(thread_id: str, **extra: Any) -> dict[str, Any]:
    """The LangGraph run configuration of one turn on ``thread_id``."""
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": RECURSION_LIMIT, **extra}


async def thread_exists(graph: CompiledStateGraph, thread_id: str) -> bool:
    """Whether ``thread_id`` has a checkpoint in the graph's checkpointer."""
    return bool((await graph.aget_state(thread_config(thread_id))).values)


@dataclass(frozen=True)
class Token:
    """A piece of the Writer's answer as the model streams it; ``message`` changes between its turns."""

    text: str
    message: str | None


async def run_stream(
    graph: CompiledStateGraph, query: str, config: dict[str, Any], context: RunContext
) -> AsyncIterator[Event | Token]:
    """Run one turn and yield what happens: the agents' progress events and the Writer's tokens.

    The final state is in the checkpointer when the iteration ends (``graph.aget_state(config)``).
    """
    stream = graph.astream({"query": query}, config, context=context, stream_mode=["custom", "messages"])
    async for mode, chunk in stream:
        if mode == "custom":
            yield chunk
            continue
        message, meta = chunk
        if meta.get("langgraph_node") == "writer" and isinstance(message, AIMessageChunk) and message.text:
            yield Token(message.text, message.id)
