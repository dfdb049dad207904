"""Long-lived MCP sessions for a run: discover tools once, call them with timeouts, errors as data.

``langchain-mcp-adapters`` opens a new session per call unless a session is held open; the hub
holds one session per server for its whole life. MCP sessions are anyio task groups, which must be
entered and exited by the same task, so one owner task opens them all, keeps them until
:meth:`ToolHub.close`, and every other task only sends requests through them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

log = logging.getLogger(__name__)
MAX_OUTPUT_CHARS = 6000
QUERY_ARGS = ("query", "q", "search_query", "keywords")


@dataclass(frozen=True)
class ToolSpec:
    """What the planner and executor see of one tool: ``server.tool`` name, description, schema."""

    name: str
    server: str
    description: str
    parameters: dict[str, Any]

    def brief(self) -> dict[str, Any]:
        """A compact description for prompts (name, description, argument names and types)."""
        props = self.parameters.get("properties", {})
        args = {key: value.get("type", "any") for key, value in props.items()}
        return {"name": self.name, "description": self.description.split("\n")[0], "args": args}


def query_argument(spec: ToolSpec) -> str | None:
    """The name of a search tool's query argument, or None when ``spec`` is not a search tool.

    A search tool takes a free-text query (``query``, ``q``, …) and its name says it searches,
    like ``docsearch.search`` or ``web.web_search``.
    """
    if "search" not in spec.name.partition(".")[2].lower():
        return None
    properties = spec.parameters.get("properties", {})
    for name in QUERY_ARGS:
        if properties.get(name, {}).get("type", "string") == "string" and name in properties:
            return name
    return None


@dataclass
class ToolOutcome:
    """The result of one tool call: ``ok`` with text output, or an error message."""

    tool: str
    args: dict[str, Any]
    ok: bool
    output: str
    error: str | None = None
    structured: Any = None
    ms: float = 0.0
    started_at: float = field(default_factory=time.time)


class ToolHub:
    """The MCP servers of a run, their tools, and calls to them."""

    def __init__(self, connections: dict[str, dict[str, Any]], *, start_timeout_s: float = 30.0) -> None:
        """Prepare (not start) a hub over ``connections`` (langchain-mcp-adapters connection dicts)."""
        self.connections = connections
        self.start_timeout_s = start_timeout_s
        self.tools: dict[str, BaseTool] = {}
        self.specs: dict[str, ToolSpec] = {}
        self.server_errors: dict[str, str] = {}
        self._client = MultiServerMCPClient(connections)
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    @classmethod
    @asynccontextmanager
    async def open(
        cls, connections: dict[str, dict[str, Any]], *, start_timeout_s: float = 30.0
    ) -> AsyncIterator[ToolHub]:
        """Start a hub for the duration of a ``with`` block."""
        hub = cls(connections, start_timeout_s=start_timeout_s)
        await hub.start()
        try:
            yield hub
        finally:
            await hub.close()

    async def start(self) -> None:
        """Open every server's session and list its tools; a server that fails is reported, not fatal."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.create_task(self._own_sessions(ready), name="mcp-session-owner")
        await ready

    async def _own_sessions(self, ready: asyncio.Future[None]) -> None:
        async with AsyncExitStack() as stack:
            for name in self.connections:
                try:
                    async with asyncio.timeout(self.start_timeout_s):
                        session = await stack.enter_async_context(self._client.session(name))
                        tools = await load_mcp_tools(session, server_name=name)
                except Exception as exc:  # a broken server must not take the others down
                    message = _exception_text(exc)
                    self.server_errors[name] = message
                    log.warning("MCP server %r unavailable: %s", name, message)
                    continue
                for tool in tools:
                    qualified = f"{name}.{tool.name}"
                    self.tools[qualified] = tool
                    schema = tool.args_schema if isinstance(tool.args_schema, dict) else {}
                    self.specs[qualified] = ToolSpec(qualified, name, tool.description or "", schema)
            ready.set_result(None)
            await self._stop.wait()

    async def close(self) -> None:
        """Close every session (stops stdio server processes)."""
        if self._owner is None:
            return
        self._stop.set()
        try:
            await asyncio.wait_for(self._owner, timeout=10)
        except (TimeoutError, Exception) as exc:  # closing must never raise into the caller
            log.warning("closing MCP sessions: %s", _exception_text(exc))
        self._owner = None

    def resolve(self, name: str) -> str | None:
        """The qualified name of a tool given as ``server.tool``, ``server_tool`` or a unique bare name."""
        if name in self.specs:
            return name
        for qualified in self.specs:
            server, _, tool = qualified.partition(".")
            if name == f"{server}_{tool}":
                return qualified
        bare = [qualified for qualified in self.specs if qualified.partition(".")[2] == name]
        return bare[0] if len(bare) == 1 else None

    async def call(self, name: str, args: dict[str, Any], *, timeout_s: float) -> ToolOutcome:
        """Call a tool; unknown tools, tool errors, crashed servers and timeouts come back as data."""
        started = time.time()
        clock = time.perf_counter()
        qualified = self.resolve(name)
        if qualified is None:
            return ToolOutcome(name, args, False, "", f"unknown tool {name!r}", started_at=started)
        try:
            message = await asyncio.wait_for(
                self.tools[qualified].ainvoke(
                    {"name": qualified, "args": args, "id": uuid.uuid4().hex, "type": "tool_call"}
                ),
                timeout=timeout_s,
            )
        except TimeoutError:
            error = f"tool {qualified} timed out after {timeout_s:g} s"
            return ToolOutcome(qualified, args, False, "", error, ms=_ms(clock), started_at=started)
        except Exception as exc:  # a crashed server or a bad argument
            error = f"tool {qualified} failed: {_exception_text(exc)}"
            return ToolOutcome(qualified, args, False, "", error, ms=_ms(clock), started_at=started)
        text = _content_text(message)
        structured = (message.artifact or {}).get("structured_content") if message.artifact else None
        if structured is None:
            structured = _json_object(text)
        if message.status == "error":
            return ToolOutcome(qualified, args, False, "", text, ms=_ms(clock), started_at=started)
        return ToolOutcome(qualified, args, True, text, None, structured, _ms(clock), started)


def _ms(clock: float) -> float:
    return round((time.perf_counter() - clock) * 1000, 1)


def _content_text(message: ToolMessage) -> str:
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        text = "\n".join(
            block if isinstance(block, str) else block.get("text") or json.dumps(block) for block in content
        )
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n[… truncated {len(text) - MAX_OUTPUT_CHARS} characters]"
    return text


def _json_object(text: str) -> dict[str, Any] | None:
    """A tool's text output parsed as a JSON object (servers without structured output send dicts as text)."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _exception_text(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_exception_text(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
