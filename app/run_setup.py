"""What every entry point that runs the graph on threads shares: the checkpointer (SQLite, or
Postgres for a ``postgresql://`` URL), a thread's configuration, the check that the model
endpoints answer, the graph opened for a long-lived server, and the run's stream reduced to
progress events and answer tokens.

The CLI's ``ask`` (``app/cli.py``), the HTTP app (``app/http_api.py``) and the MCP server
(``app/mcp_server.py``) all use these, so a thread started on one can be continued on the others
against the same database.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from langchain_core.messages import AIMessageChunk
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command
from rich.console import Console

from app.docs_cli import use_docs_server
from core.events import Event
from core.run import ModelProvider, Run, RunContext, open_run
from core.settings import Settings, check_thread_store
from core.state import InputState
from graph.builder import SearchGraph, build_graph
from models.config import ROLES, ConfigError
from tools.registry import load_connections

log = logging.getLogger(__name__)

RECURSION_LIMIT = 200
"""Supersteps one turn may take: well above what the budgets allow, so the budgets end every loop."""


POSTGRES_POOL_SIZE = 8
"""Connections to Postgres per process: checkpoint reads and writes are short, runs share them."""
SETUP_LOCK = 0x61697365_61726368  # "aisearch": the advisory lock that serialises table creation
SETUP_LOCK_TIMEOUT_S = 120.0  # another worker's schema set-up takes well under a second
SETUP_LOCK_POLL_S = 0.1


@asynccontextmanager
async def open_checkpointer(settings: Settings) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The thread store of ``settings``: Postgres when ``settings.db_url`` is set (its tables are
    created on first use), else the SQLite database at ``settings.db_path`` (created if missing).

    Raises:
        ConfigError: A Postgres URL without ``langgraph-checkpoint-postgres`` installed, or a SQLite
            path that cannot hold the threads (``check_thread_store``).
    """
    check_thread_store(settings)
    if settings.db_url:
        async with _postgres(settings.db_url) as saver:
            yield saver
        return
    settings.db_path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(settings.db_path)) as saver:
        yield saver


@asynccontextmanager
async def _postgres(url: str) -> AsyncIterator[BaseCheckpointSaver[Any]]:
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
        # psycopg_pool types the pool by its connection class, not by the row_factory passed in kwargs
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        # several workers start at once: their CREATE TABLE IF NOT EXISTS would race on a new database
        async with pool.connection() as connection:
            await _take_setup_lock(connection)
            try:
                await saver.setup()
            finally:
                await connection.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
        yield saver


async def _take_setup_lock(connection: Any, timeout_s: float = SETUP_LOCK_TIMEOUT_S) -> None:
    """Take the schema set-up lock, polling: a session blocked in ``pg_advisory_lock`` keeps a
    snapshot open, which the holder's ``CREATE INDEX CONCURRENTLY`` waits for (a deadlock Postgres
    does not detect); between tries this session holds nothing.

    Raises:
        ConfigError: Another process held the lock for ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        cursor = await connection.execute("SELECT pg_try_advisory_lock(%s) AS taken", (SETUP_LOCK,))
        row = await cursor.fetchone()
        if row and row["taken"]:
            return
        if time.monotonic() > deadline:
            raise ConfigError(f"the thread store's set-up lock was held for over {timeout_s:.0f} s")
        await asyncio.sleep(SETUP_LOCK_POLL_S)


class EndpointUnreachable(ConnectionError):
    """A configured remote model endpoint does not answer."""


def check_endpoints(settings: Settings, timeout_s: float = 5.0) -> None:
    """Fail early, with a clear message, when a configured remote endpoint is unreachable.

    Raises:
        EndpointUnreachable: The first role whose endpoint does not answer ``GET …/models``.
    """
    seen: set[str] = set()
    for role in ROLES:
        role_settings = settings.role(role)
        if role_settings.is_local or role_settings.base_url in seen:
            continue
        seen.add(role_settings.base_url)
        url = role_settings.base_url.rstrip("/") + "/models"
        headers = {"Authorization": f"Bearer {role_settings.api_key}"} if role_settings.api_key else {}
        try:
            httpx.get(url, timeout=timeout_s, headers=headers).raise_for_status()
        except httpx.HTTPError as exc:
            raise EndpointUnreachable(
                f"cannot reach the {role} model endpoint {role_settings.base_url} ({exc}). "
                "Start it, or set AISEARCH_BASE_URL / AISEARCH_<ROLE>_BASE_URL to an OpenAI-compatible "
                "endpoint, or unset them to use the embedded local models."
            ) from exc


@dataclass(frozen=True)
class Served:
    """What a long-lived server holds open: its settings, the graph on the checkpointer, the run."""

    settings: Settings
    graph: SearchGraph
    run: Run


@asynccontextmanager
async def open_served(
    settings: Settings,
    *,
    models: ModelProvider | None = None,
    connections: dict[str, dict[str, Any]] | None = None,
) -> AsyncIterator[Served]:
    """Open what a long-lived server (the HTTP app, the MCP server) answers with: the checkpointer,
    the run (models, MCP servers, the caches ``settings.cache`` turns on) and the graph, until the
    context ends.

    Args:
        settings: The server's settings.
        models: The chat model of each role (default: built from the settings).
        connections: MCP connections (default: the bundled servers and ``settings.mcp_config``,
            docsearch from the long-lived document server when it is on; its messages go to stderr).
    """
    if connections is None:
        connections = load_connections(settings.mcp_config, settings.websearch)
        await use_docs_server(connections, settings, Console(stderr=True))
    async with (
        open_checkpointer(settings) as saver,
        open_run(settings, connections=connections, models=models, cache=True) as run,
    ):
        for name, error in run.tools.server_errors.items():
            log.warning("MCP server %s unavailable: %s", name, error)
        log.info("serving threads from %s", store_label(settings))
        yield Served(settings, build_graph(checkpointer=saver), run)


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


def thread_config(thread_id: str) -> RunnableConfig:
    """The LangGraph run configuration of one turn on ``thread_id``."""
    return RunnableConfig(configurable={"thread_id": thread_id}, recursion_limit=RECURSION_LIMIT)


async def thread_exists(graph: SearchGraph, thread_id: str) -> bool:
    """Whether ``thread_id`` has a checkpoint in the graph's checkpointer."""
    return bool((await graph.aget_state(thread_config(thread_id))).values)


@dataclass(frozen=True)
class Token:
    """A piece of the Writer's answer as the model streams it; ``message`` changes between its turns."""

    text: str
    message: str | None


async def pending_requests(graph: SearchGraph, config: RunnableConfig) -> list[dict[str, Any]]:
    """What a paused run on the thread of ``config`` waits for: ``[{"id", "value"}]``, each value an
    ``interrupt`` payload (``core.human``); empty when the run is not paused."""
    snapshot = await graph.aget_state(config)
    return [{"id": pending.id, "value": pending.value} for pending in snapshot.interrupts]


def graph_input(value: str | Command[Any]) -> InputState | Command[Any]:
    """What the graph is called with: a new turn's question, or a paused run's ``Command(resume=…)``."""
    return InputState(query=value) if isinstance(value, str) else value


async def run_stream(
    graph: SearchGraph, query: str | Command[Any], config: RunnableConfig, context: RunContext
) -> AsyncIterator[Event | Token]:
    """Run one turn (or resume a paused one: ``Command(resume=…)``) and yield what happens: the
    agents' progress events and the Writer's tokens.

    The final state is in the checkpointer when the iteration ends (``graph.aget_state(config)``);
    a run that paused for a person has :func:`pending_requests`.
    """
    # langgraph types the v1 stream's items as dicts; with a list of modes they are (mode, chunk) pairs
    stream: AsyncIterator[tuple[str, Any]] = graph.astream(  # type: ignore[assignment]
        graph_input(query), config, context=context, stream_mode=["custom", "messages"]
    )
    async for mode, chunk in stream:
        if mode == "custom":
            yield chunk
            continue
        message, meta = chunk
        if meta.get("langgraph_node") == "writer" and isinstance(message, AIMessageChunk) and message.text:
            yield Token(message.text, message.id)
