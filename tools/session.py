"""One MCP server for the life of a run: its own task, session and tools, so its failure is its own.

An MCP session is an anyio task group, which must be entered and left by one task, and an error in
its transport (invalid UTF-8 on stdout, a broken pipe) cancels that task. So each server gets its
own owner task: when one dies, only that server is down, and the hub's other servers never notice.

Start-up is bounded (``start_timeout_s``). A call that times out or fails below the tool (the
connection closed, the process exited) is followed by a ping; a server that does not answer it in
``probe_timeout_s`` is restarted in the background, at most ``max_restarts`` times, so a stuck tool
does not block its server's later calls. Every failure ends up as text in :attr:`ServerSession.error`
or as an exception of the call, never in another server.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.sessions import Connection, create_session
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerLimits:
    """How long a server may take to start, to answer a ping and to stop, and how often it restarts."""

    start_timeout_s: float = 30.0
    probe_timeout_s: float = 2.0
    close_timeout_s: float = 10.0
    max_restarts: int = 2


class ServerUnavailable(RuntimeError):
    """The server is down (did not start, exited, or stopped answering); the message says why."""


class _OneLineParseErrors(logging.Filter):
    """The SDK logs each unparseable stdout line with a traceback; keep it to one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            text = " ".join(f"{record.getMessage()}: {exception_text(record.exc_info[1])}".split())
            record.msg = text[:300]
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


logging.getLogger("mcp.client.stdio").addFilter(_OneLineParseErrors())


def tolerant(connection: dict[str, Any]) -> dict[str, Any]:
    """A stdio connection that decodes invalid UTF-8 as U+FFFD instead of failing the transport.

    An entry that names its own ``encoding_error_handler`` keeps it.
    """
    if connection.get("transport") != "stdio":
        return connection
    return {"encoding_error_handler": "replace", **connection}


class ServerSession:
    """One MCP server: started, called, recovered and stopped on its own."""

    def __init__(self, name: str, connection: dict[str, Any], limits: ServerLimits) -> None:
        """Prepare (not start) the server ``name`` over ``connection`` (a langchain-mcp-adapters dict)."""
        self.name = name
        self.connection = tolerant(connection)
        self.limits = limits
        self.tools: dict[str, BaseTool] = {}
        self.instructions = ""  # what the server says it does (MCP ``initialize``), once started
        self.error: str | None = None
        self.restarts = 0
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._recovery: asyncio.Task[None] | None = None
        self._closing = False

    async def start(self) -> None:
        """Start the server and list its tools within ``start_timeout_s``; a failure goes to :attr:`error`."""
        self._stop = asyncio.Event()
        ready: asyncio.Future[dict[str, BaseTool] | str] = asyncio.get_running_loop().create_future()
        owner = self._owner = asyncio.create_task(self._own(ready), name=f"mcp-server-{self.name}")
        try:
            outcome = await asyncio.wait_for(asyncio.shield(ready), self.limits.start_timeout_s)
        except TimeoutError:
            outcome = f"did not start within {self.limits.start_timeout_s:g} s"
        if isinstance(outcome, str):
            self.error = outcome
            owner.cancel()  # its process is stopped in the background; close() waits for it
            return
        self.tools = outcome
        self.error = None

    async def _own(self, ready: asyncio.Future[dict[str, BaseTool] | str]) -> None:
        """Hold the session from start to stop: the one task that enters and leaves it."""
        failure = "the session ended"
        try:
            async with create_session(cast(Connection, self.connection)) as session:
                initialized = await session.initialize()
                self.instructions = (getattr(initialized, "instructions", None) or "").strip()
                tools = await load_mcp_tools(session, server_name=self.name)
                self._session = session
                ready.set_result({tool.name: tool for tool in tools})
                await self._stop.wait()
                failure = ""
        except Exception as exc:  # the transport failed (invalid UTF-8, exited, refused): this server only
            failure = exception_text(exc) or failure
        finally:
            self._session = None
            if not ready.done():
                ready.set_result(f"did not start: {failure or 'stopped'}")
            elif failure and not self._closing:
                self.error = f"exited: {failure}"
                log.warning("MCP server %r %s", self.name, self.error)
                self._check_health()

    async def _halt(self) -> None:
        """Stop the owner task: gracefully when the session is up, by cancellation when it is not."""
        owner = self._owner
        if owner is None:
            return
        if not owner.done():
            if self._session is None and not owner.cancelling():  # a second cancel would cut its cleanup
                owner.cancel()
            self._stop.set()
            _, pending = await asyncio.wait({owner}, timeout=self.limits.close_timeout_s)
            if pending:
                owner.cancel()
                _, pending = await asyncio.wait({owner}, timeout=self.limits.close_timeout_s)
            if pending:
                log.warning(
                    "MCP server %r did not stop within %g s", self.name, 2 * self.limits.close_timeout_s
                )
        if self._owner is owner:  # a halt cut short leaves the owner for close() to stop
            self._owner = None

    async def invoke(self, tool: str, args: dict[str, Any], *, timeout_s: float) -> ToolMessage:
        """Call ``tool`` with ``args``; waiting for a restart in progress counts against ``timeout_s``.

        Raises:
            ServerUnavailable: The server is down.
            TimeoutError: No answer within ``timeout_s`` (the server's health is then checked).
            Exception: Whatever the transport raised (the server's health is then checked).
        """
        deadline = asyncio.get_running_loop().time() + timeout_s
        if self._recovery is not None and not self._recovery.done():
            _, pending = await asyncio.wait({self._recovery}, timeout=timeout_s)
            if pending:
                raise TimeoutError(f"server {self.name} is still restarting")
        if self.error is not None:
            raise ServerUnavailable(self.error)
        if tool not in self.tools:
            raise ServerUnavailable(f"no tool {tool!r} since the server restarted")
        call = {"name": tool, "args": args, "id": uuid.uuid4().hex, "type": "tool_call"}
        try:
            async with asyncio.timeout_at(deadline):
                message: ToolMessage = await self.tools[tool].ainvoke(call)
                return message
        except Exception:
            self._check_health()
            raise

    def _check_health(self) -> None:
        """Ping the server in the background and restart it when it does not answer."""
        if self._closing or (self._recovery is not None and not self._recovery.done()):
            return
        self._recovery = asyncio.create_task(self._recover(), name=f"mcp-recover-{self.name}")

    async def _recover(self) -> None:
        session = self._session
        if session is not None and self.error is None:
            try:
                await asyncio.wait_for(session.send_ping(), self.limits.probe_timeout_s)
                return  # a slow tool, not a stuck server
            except Exception as exc:
                self.error = f"did not answer a ping within {self.limits.probe_timeout_s:g} s"
                log.warning("MCP server %r %s (%s)", self.name, self.error, exception_text(exc))
        if self.restarts >= self.limits.max_restarts:
            self.error = f"{self.error or 'down'}; given up after {self.restarts} restart(s)"
            await self._halt()
            return
        self.restarts += 1
        log.warning("restarting MCP server %r (restart %d)", self.name, self.restarts)
        await self._halt()
        await self.start()

    async def close(self) -> None:
        """Stop the server (its process too, for stdio); never raises."""
        self._closing = True
        recovery = self._recovery
        if recovery is not None and not recovery.done():
            recovery.cancel()
            await asyncio.gather(recovery, return_exceptions=True)
        try:
            await self._halt()
        except Exception as exc:  # closing must never raise into the caller
            log.warning("closing MCP server %r: %s", self.name, exception_text(exc))


def exception_text(exc: BaseException) -> str:
    """An exception as one line, the inner ones of an exception group joined."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(exception_text(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
