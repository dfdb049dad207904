"""The run: what nodes need besides the state (settings, per-role chat models, the MCP tool hub, a clock).

One place opens it, :func:`open_run`, used by the CLI, the evaluations and the LangGraph Server
export alike; it owns the local model server (started when a role uses it), the tool hub and the
chat models. The graph receives it as LangGraph's run context (``context_schema``)::

    async with open_run(settings) as run:
        await graph.ainvoke({"query": question}, config, context=RunContext(run=run))

and a node reads it from its ``Runtime`` with :func:`current_run`. Chat models and MCP sessions
are not serialisable, so they never enter the checkpointed state or the run configuration.

LangGraph Server (``langgraph dev``, Studio) cannot send live objects and passes an empty context;
its nodes use the server process's own run, opened with :func:`open_run` on first use and kept for
the life of the process.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime
from pydantic import ConfigDict
from pydantic.json_schema import SkipJsonSchema

from core.settings import Settings, load_settings
from models.config import ROLES, Role
from models.factory import build_chat_model
from models.local_server import ensure_server_state, stop_server
from tools.cache.answers import AnswerCache, CacheLimits, answer_cache_path
from tools.cache.tool_calls import ToolCacheLimits, ToolCallCache, tool_cache_path
from tools.candidates import ToolCandidates
from tools.catalog.paths import collection_name
from tools.catalog.retrieve import RetrievalOptions, record_kinds
from tools.catalog.run_catalog import run_servers
from tools.catalog.run_index import DeferredEmbedder, RunIndex
from tools.hub import ToolHub, ToolOutcome
from tools.index.fingerprint import corpus_fingerprint
from tools.index.paths import INDEX_DIR_ENV
from tools.registry import DOCSEARCH, EAGER_SERVERS, load_connections
from tools.tool_graph import ToolHistory
from tools.toolkits import Toolkits

log = logging.getLogger(__name__)

ModelProvider = Callable[[Role], BaseChatModel]
Clock = Callable[[], datetime]
Status = Callable[[str], AbstractContextManager[Any]]
SERVER_START = "starting the local model server (the first run assembles the models)…"


def local_now() -> datetime:
    """The current time in the local timezone."""
    return datetime.now().astimezone()


@dataclass
class Run:
    """The objects one run of the graph uses."""

    settings: Settings
    models: ModelProvider
    tools: ToolHub
    now: Clock = local_now
    candidates: ToolCandidates | None = None
    toolkits: Toolkits | None = None  # equivalent tools, made on the first failed call
    history: ToolHistory | None = None  # tool and chain success counts (agents/tool_history.py)
    answers: AnswerCache | None = None  # the semantic answer cache (agents/recall.py); None: off
    tool_cache: ToolCallCache | None = None  # identical tool calls answered from earlier ones; None: off
    _cache: dict[Role, BaseChatModel] = field(default_factory=dict, repr=False)

    def model(self, role: Role) -> BaseChatModel:
        """The chat model of ``role`` (built once per run)."""
        if role not in self._cache:
            self._cache[role] = self.models(role)
        return self._cache[role]

    def corpus(self) -> str:
        """The fingerprint of the documents this run searches (``tools/index/fingerprint.py``): the
        index the docsearch connection names, else the user's."""
        env = self.tools.connections.get(DOCSEARCH, {}).get("env") or {}
        root = env.get(INDEX_DIR_ENV)
        return corpus_fingerprint(Path(root).expanduser() if root else None)

    async def call_tool(
        self, name: str, args: dict[str, Any], *, timeout_s: float | None = None
    ) -> ToolOutcome:
        """Call a tool (default timeout: the ``tool_timeout_s`` budget); an identical earlier call
        of a cacheable tool (``tools/cache/tool_calls.py``) answers instead unless the run bypasses
        the cache, and a fresh successful result of one is kept."""
        timeout = timeout_s if timeout_s is not None else self.settings.budgets.tool_timeout_s
        cache = self.tool_cache
        spec = self.tools.specs.get(self.tools.resolve(name) or "")
        if cache is None or spec is None:
            return await self.tools.call(name, args, timeout_s=timeout)
        corpus = await asyncio.to_thread(self.corpus)
        if spec.cacheable and not self.settings.bypass_cache:
            try:
                hit = await asyncio.to_thread(cache.get, spec.name, args, corpus)
            except sqlite3.Error as exc:  # a broken cache file never fails a call
                log.warning("tool-call cache %s unreadable: %s", cache.path, exc)
                hit = None
            if hit is not None:
                return hit
        outcome = await self.tools.call(name, args, timeout_s=timeout)
        spec = self.tools.specs.get(outcome.tool)  # the server's own listing, once it started
        if outcome.ok and spec is not None and spec.cacheable:
            try:
                await asyncio.to_thread(cache.put, outcome, corpus)
            except sqlite3.Error as exc:
                log.warning("could not keep a tool result in %s: %s", cache.path, exc)
        return outcome

    def tool_candidates(self) -> ToolCandidates:
        """The catalogue retrieval of this run's candidate tools (made on first use)."""
        if self.candidates is None:
            self.candidates = default_candidates(self.settings, self.tools)
        return self.candidates


def candidate_options(settings: Settings) -> RetrievalOptions:
    """How a run retrieves its candidate tools: rule decomposition (no model call), over the
    synthetic queries too only when ``tool_synthetic_queries`` says so."""
    return RetrievalOptions(decompose="rules", kinds=record_kinds(settings.tool_synthetic_queries))


def open_caches(run: Run) -> None:
    """Give ``run`` the caches its settings turn on, in SQLite beside the thread store; one that
    cannot be opened (an unwritable folder, a file that is not SQLite) is logged and left off."""
    cache, db_path = run.settings.cache, run.settings.db_path
    try:
        if cache.answers:
            from tools.index.remote_embedder import routing_embedder

            limits = CacheLimits(cache.similarity, cache.answer_ttl_hours * 3600, cache.max_answers)
            run.answers = AnswerCache(answer_cache_path(db_path), DeferredEmbedder(routing_embedder), limits)
        if cache.tools:
            tool_limits = ToolCacheLimits(cache.tool_ttl_minutes * 60, cache.max_tool_calls)
            run.tool_cache = ToolCallCache(tool_cache_path(db_path), tool_limits)
    except (sqlite3.Error, OSError) as exc:
        log.warning("the caches in %s are off for this run: %s", db_path.parent, exc)


def default_candidates(settings: Settings, hub: ToolHub) -> ToolCandidates:
    """Candidate retrieval over ``hub``'s tools, reusing the index of ``aisearch tools index`` for
    the configured catalogues; queries are embedded by the document server's MiniLM when it runs."""
    from tools.index.remote_embedder import routing_embedder

    embedder = DeferredEmbedder(routing_embedder)  # made when a query is first embedded
    index = RunIndex(embedder, collection=collection_name(settings.tool_catalogs))
    return ToolCandidates(hub, index, candidate_options(settings))


@dataclass(kw_only=True)
class RunContext:
    """The graph's ``context_schema``: the open run of this invocation.

    Empty when LangGraph Server builds it from a request (no live objects travel over HTTP).
    """

    # LangGraph Server asks for the context's JSON schema: the run is left out of it
    __pydantic_config__ = ConfigDict(arbitrary_types_allowed=True)

    run: SkipJsonSchema[Run | None] = None


@asynccontextmanager
async def open_run(
    settings: Settings,
    *,
    connections: dict[str, dict[str, Any]] | None = None,
    models: ModelProvider | None = None,
    now: Clock = local_now,
    status: Status = lambda message: nullcontext(),
    cache: bool = False,
) -> AsyncIterator[Run]:
    """Open a run: the local model server when a role uses it, the MCP tool hub, the chat models.

    Args:
        settings: The effective settings.
        connections: MCP connections (default: the bundled servers and ``settings.mcp_config``);
            the startable servers of ``settings.tool_catalogs`` join them.
        models: The chat model of each role (default: built from ``settings``).
        now: The clock the Master grounds dates in.
        status: Wraps the model server's start, e.g. a console spinner (``Console.status``).
        cache: Open the answer and tool-call caches ``settings.cache`` turns on (``ask``, the
            servers); evaluations and benchmarks leave it off, as they measure the team.

    A model server started here is stopped on exit only when ``local.keep_running`` is off. MCP
    servers start lazily (``tools/hub.py``): those the catalogue or an earlier run's listing
    describes when their tools are selected, the others and the document server now; all stop on
    exit.
    """
    async with AsyncExitStack() as stack:
        if any(settings.role(role).is_local for role in ROLES):
            with status(SERVER_START):
                _, started = await asyncio.to_thread(ensure_server_state, settings)  # blocking start
            if started and not settings.local.keep_running:
                stack.push_async_callback(asyncio.to_thread, stop_server)
        if connections is None:
            connections = load_connections(settings.mcp_config, settings.websearch)
        servers = run_servers(connections, catalogs=settings.tool_catalogs, mcp_config=settings.mcp_config)
        hub = await stack.enter_async_context(
            ToolHub.open(
                servers.connections,
                described=servers.specs(),
                descriptions=servers.descriptions(),
                eager=EAGER_SERVERS,
                on_started=servers.remember,
            )
        )
        for server, error in hub.server_errors.items():
            log.info("MCP server %s unavailable: %s", server, error)
        run = Run(settings, models or (lambda role: build_chat_model(role, settings)), hub, now)
        run.candidates = default_candidates(settings, hub)
        if cache:
            open_caches(run)
        yield run


_SERVER_RUNS = AsyncExitStack()
_SERVER_RUN: Run | None = None
_SERVER_LOCK = asyncio.Lock()


async def server_run() -> Run:
    """The run of a LangGraph Server process: opened from the settings on first use, kept open."""
    global _SERVER_RUN
    async with _SERVER_LOCK:
        if _SERVER_RUN is None:
            _SERVER_RUN = await _SERVER_RUNS.enter_async_context(open_run(load_settings(), cache=True))
    return _SERVER_RUN


async def current_run(runtime: Runtime[RunContext]) -> Run:
    """The run a node works in: the one its caller passed, else the server process's own."""
    context: RunContext | None = runtime.context  # None when the caller passed no context
    if context is not None and context.run is not None:
        return context.run
    return await server_run()
