"""What every entry point that runs the graph on threads shares: the checkpointer (SQLite, or
Postgres for a ``postgresql://`` URL), a thread's configuration, and the run's stream reduced to
progress events and answer tokens.

The CLI's ``ask`` (``app/cli.py``) and the HTTP app (``app/http_api.py``) both use these, so a
thread started on one can be continued on the other against the same database.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langchain_core.messages import AIMessageChunk
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph

from core.events import Event
from core.run import RunContext
from core.settings import Settings
from models.config import ConfigError

RECURSION_LIMIT = 200
"""Supersteps one turn may take: well above what the budgets allow, so the budgets end every loop."""


POSTGRES_POOL_SIZE = 8
"""Connections to Postgres per process: checkpoint reads and writes are short, runs share them."""
SETUP_LOCK = 0x61697365_61726368  # "aisearch": the advisory lock that serialises table creation


@asynccontextmanager
async def open_checkpointer(settings: Settings) -> AsyncIterator[BaseCheckpointSaver]:
    """The thread store of ``settings``: Postgres when ``settings.db_url`` is set (its tables are
    created on first use), else the SQLite database at ``settings.db_path`` (created if missing).

    Raises:
        ConfigError: A Postgres URL without ``langgraph-checkpoint-postgres`` installed.
    """
    if settings.db_url:
        async with _postgres(settings.db_url) as saver:
            yield saver
        return
    settings.db_path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(settings.db_path)) as saver:
        yield saver


@asynccontextmanager
async def _postgres(url: str) -> AsyncIterator[BaseCheckpointSaver]:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool
    except ImportError as exc:
        raise ConfigError(
            f"threads in Postgres need langgraph-checkpoint-postgres ({exc.name} is missing): "
            "pip install 'aisearch[postgres]'"
        ) from None
    # the connection settings AsyncPostgresSaver.from_conn_string uses, on a pool of them
    options = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(url, max_size=POSTGRES_POOL_SIZE, kwargs=options, open=False) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        # several workers start at once: their CREATE TABLE IF NOT EXISTS would race on a new database
        async with pool.connection() as connection:
            await connection.execute("SELECT pg_advisory_lock(%s)", (SETUP_LOCK,))
            try:
                await saver.setup()
            finally:
                await connection.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
        yield saver


def store_label(settings: Settings) -> str:
    """Where the threads are, for messages: the SQLite path, or the Postgres URL without its password."""
    if not settings.db_url:
        return str(settings.db_path)
    parts = urlsplit(settings.db_url)
    if parts.password is None:
        return settings.db_url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


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
