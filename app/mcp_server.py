"""aisearch as an MCP server (``aisearch mcp``): other agents ask it questions and search its documents.

Tools:

- ``ask(query, thread_id?)``: the whole graph (Master, Planner, Executor, Writer) on a new thread,
  or the next turn of ``thread_id``'s conversation; threads live in the same checkpointer as
  ``aisearch ask`` and ``aisearch serve`` use (``app/run_setup.py``), so a thread continues across
  all three. Returns the short answer, the cited answer and its sources (structured, and as text);
  each progress event (route, plan, tasks) is sent as a progress notification when the client asks
  for them.
- ``search(query, k, collection?)``: hybrid search (BM25 + MiniLM) over the local document index,
  the same service the ``docsearch`` MCP server runs (``tools/index/service.py``).

The run (models, MCP tool servers, checkpointer) opens in the background when the server starts,
so the client's handshake and ``search`` do not wait for it. Every failure (an empty query, a
missing index, an unreachable model endpoint, a run that could not open or failed) comes back as
an MCP tool error with a one-line message; the server keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import uvicorn
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from starlette.applications import Starlette

from app.mcp_results import AskResult, SearchResult, ask_result, ask_text, describe_event, search_result
from app.mcp_results import search_text as format_search
from app.run_setup import (
    Served,
    Token,
    check_endpoints,
    new_thread_id,
    open_served,
    run_stream,
    store_label,
    thread_config,
    thread_exists,
)
from core.query import QueryError, prepare_query
from core.run import RunContext
from core.settings import Settings
from tools.index.errors import IndexUserError
from tools.index.service import MAX_K, DocSearch

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")
INSTRUCTIONS = (
    "aisearch answers questions with a team of agents (it plans, searches local documents, runs "
    "tools such as a Python sandbox and a clock, and cites its sources). Use `ask` for a question "
    "that needs an answer; pass the thread_id it returns to ask a follow-up. Use `search` to get raw "
    "passages from the local document index."
)
OPEN_TIMEOUT_S = 600.0
"""How long ``ask`` waits for the run to open (a first start of the local model server is slow)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


class Backend:
    """What the tools share for the life of the server: the run (opened in the background), the
    document search, and the threads with a turn in progress."""

    def __init__(self, settings: Settings, docs: DocSearch | None = None) -> None:
        """Nothing opens yet: :meth:`hold` opens the run, the document search loads on first use.

        Make it inside the event loop that serves (its events belong to that loop).
        """
        self.settings = settings
        self.served: Served | None = None
        self.failure: str | None = None
        self.ready = asyncio.Event()
        self.busy: set[str] = set()
        self._stop = anyio.Event()
        self._closed = anyio.Event()
        self._docs = docs

    async def hold(self) -> None:
        """Open the run, keep it open until :meth:`close`, then close it (its MCP servers stop).

        A run that cannot open is recorded in :attr:`failure`, which every ``ask`` then reports.
        """
        try:
            async with open_served(self.settings) as served:
                self.served = served
                self.ready.set()
                log.info("aisearch MCP server ready (threads in %s)", store_label(self.settings))
                await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - reported to every ask; search still works
            self.failure = _first_line(exc)
            log.error("the run could not open: %s", self.failure, exc_info=log.isEnabledFor(logging.DEBUG))
        finally:
            self.served = None
            self.ready.set()
            self._closed.set()

    async def close(self) -> None:
        """Close the run that :meth:`hold` holds, and wait until it is closed."""
        self._stop.set()
        await self._closed.wait()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Hold the run open in the background (:meth:`hold`) for the life of the context."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.hold)
            try:
                yield
            finally:
                self._stop.set()

    async def _served(self) -> Served:
        try:
            await asyncio.wait_for(self.ready.wait(), OPEN_TIMEOUT_S)
        except TimeoutError:
            raise ToolError(f"aisearch is still starting after {OPEN_TIMEOUT_S:.0f} s; try again") from None
        if self.served is None:
            raise ToolError(f"aisearch could not start its run ({self.failure or 'it has stopped'})")
        return self.served

    async def ask(
        self, query: str, thread_id: str | None, ctx: Context[Any, Any, Any] | None = None
    ) -> AskResult:
        """One turn of the graph on a new thread or on ``thread_id``; the answer with its sources.

        Raises:
            ToolError: An empty query, an unknown or busy thread, an unreachable model endpoint, a
                run that could not open or that failed.
        """
        try:
            prepared = prepare_query(query)
        except QueryError as exc:
            raise ToolError(f'{exc}, e.g. ask(query="Who designed the Eiffel Tower?")') from None
        served = await self._served()
        if thread_id is not None and not await thread_exists(served.graph, thread_id):
            raise ToolError(
                f"unknown thread id {thread_id!r} (in {store_label(served.settings)}); "
                "omit thread_id to start a new conversation"
            )
        try:
            await asyncio.to_thread(check_endpoints, served.settings)
        except ConnectionError as exc:
            raise ToolError(str(exc)) from None
        thread = thread_id or new_thread_id()
        if thread in self.busy:
            raise ToolError(f"thread {thread!r} has a question in progress; ask again when it is answered")
        self.busy.add(thread)
        config = thread_config(thread)
        try:
            done = 0
            async for item in run_stream(served.graph, prepared.text, config, RunContext(run=served.run)):
                if ctx is not None and not isinstance(item, Token):
                    done += 1
                    await ctx.report_progress(done, None, describe_event(item))
            values = (await served.graph.aget_state(config)).values
        except Exception as exc:  # the graph degrades on its own: this is a bug, said in one line
            log.exception("the run on thread %s failed", thread)
            raise ToolError(f"the run failed ({_first_line(exc)})") from None
        finally:
            self.busy.discard(thread)
        return ask_result(thread, values)

    def docs(self) -> DocSearch:
        """The document search over the local index (``$AISEARCH_INDEX_DIR``), made on first use."""
        if self._docs is None:
            self._docs = DocSearch(build_default=False)
        return self._docs

    async def search(self, query: str, k: int, collection: str) -> SearchResult:
        """Hybrid search of ``collection`` (default: the index's default collection).

        Raises:
            ToolError: An empty query, a missing or empty index or collection.
        """
        docs = self.docs()
        try:
            found = await anyio.to_thread.run_sync(
                docs.search, query, k, collection or docs.default_collection, True
            )
        except IndexUserError as exc:
            raise ToolError(str(exc)) from None
        except ValueError as exc:  # the query is empty
            raise ToolError(str(exc)) from None
        return search_result(found)


def build_server(backend: Backend, *, host: str, port: int) -> FastMCP:
    """The FastMCP server with the ``ask`` and ``search`` tools over ``backend``.

    On a loopback ``host`` the SDK's DNS-rebinding protection is on; on another host it is off
    (the server is meant to be reached by name from other machines) and a warning is logged.
    """
    security = None
    if host not in LOOPBACK:
        log.warning("serving MCP on %s: the server is reachable from other machines, without auth", host)
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    server = FastMCP(
        "aisearch",
        instructions=INSTRUCTIONS,
        host=host,
        port=port,
        log_level="WARNING",
        transport_security=security,
    )

    @server.tool()
    async def ask(  # noqa: D417 - ctx is the SDK's, not the caller's
        query: str,
        ctx: Context,  # type: ignore[type-arg]  # FastMCP finds its context parameter only by the bare class
        thread_id: str | None = None,
    ) -> Annotated[CallToolResult, AskResult]:
        """Answer a question with aisearch's agents, citing the sources they found.

        The Master decides how much work the question needs; the Planner splits a complex one into
        steps; the Executor searches the local documents and runs tools (a Python sandbox, a
        clock, any configured MCP server); the Writer answers, short answer first, citing [n].

        Args:
            query: The question, in words.
            thread_id: A thread_id an earlier `ask` returned, to ask a follow-up in that
                conversation ("When was he born?"); omit it to start a new conversation.
        """
        result = await backend.ask(query, thread_id, ctx)
        return CallToolResult(
            content=[TextContent(type="text", text=ask_text(result))],
            structuredContent=result.model_dump(mode="json"),
        )

    @server.tool()
    async def search(query: str, k: int = 5, collection: str = "") -> Annotated[CallToolResult, SearchResult]:
        """Search the local document index and return the best passages (id, title, text, score, source).

        Hybrid ranking: keyword (BM25) and semantic (MiniLM embeddings) results fused together.
        Documents are added with `aisearch index PATH` (Markdown, text, HTML, JSONL, PDF);
        `aisearch index --default` indexes the Python standard library documentation.

        Args:
            query: A question or keywords.
            k: Number of passages to return (1-20, default 5).
            collection: The collection to search (default: "docs").
        """
        result = await backend.search(query, max(1, min(k, MAX_K)), collection)
        return CallToolResult(
            content=[TextContent(type="text", text=format_search(result))],
            structuredContent=result.model_dump(mode="json"),
        )

    return server


async def serve(settings: Settings, transport: str, host: str, port: int) -> None:
    """Serve aisearch over MCP until the client leaves (stdio: stdin closes), or SIGINT/SIGTERM.

    The run opens beside the transport and closes after it, stopping the MCP tool servers it started
    (over HTTP in the app's shutdown, which uvicorn runs on SIGINT/SIGTERM before it exits).
    """
    backend = Backend(settings)
    server = build_server(backend, host=host, port=port)
    if transport == "stdio":
        async with anyio.create_task_group() as group:
            group.start_soon(_close_on_signal, backend)
            async with backend.running():
                await server.run_stdio_async()
            group.cancel_scope.cancel()
        return
    app = server.streamable_http_app()
    sessions = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with sessions(app), backend.running():
            yield

    app.router.lifespan_context = lifespan
    config = uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower())
    await uvicorn.Server(config).serve()


async def _close_on_signal(backend: Backend) -> None:
    """On SIGINT or SIGTERM close the run (its MCP servers stop), then die of that signal as usual.

    Cancelling the stdio transport would not do: it reads stdin in a worker thread that only
    returns on the client's next line or end of input.
    """
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for received in signals:
            log.info("stopping on signal %s", received)
            await backend.close()
            signal.signal(received, signal.SIG_DFL)
            signal.raise_signal(received)
            return
