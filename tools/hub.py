"""The MCP servers of a run: tools discovered once, calls with timeouts, every failure as data.

``langchain-mcp-adapters`` opens a new session per call unless a session is held open; the hub
holds one long-lived session per server (``tools/session.py``), each owned by its own task, so one
server's crash, garbage output or hang is that server's failure alone. Servers start concurrently,
each within its own start timeout; tool schemas are normalised (``tools/schema.py``) before the
planner and executor read them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage

from tools.schema import normalise_schema, type_label
from tools.session import ServerLimits, ServerSession, ServerUnavailable, exception_text

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
        args = {key: type_label(value) for key, value in props.items()}
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
        kinds = type_label(properties[name]).split("|") if name in properties else []
        if "string" in kinds or kinds == ["any"]:
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

    def __init__(self, connections: dict[str, dict[str, Any]], *, limits: ServerLimits | None = None) -> None:
        """Prepare (not start) a hub over ``connections`` (langchain-mcp-adapters connection dicts)."""
        self.connections = connections
        self.limits = limits or ServerLimits()
        self.servers = {name: ServerSession(name, conn, self.limits) for name, conn in connections.items()}
        self.specs: dict[str, ToolSpec] = {}

    @classmethod
    @asynccontextmanager
    async def open(
        cls, connections: dict[str, dict[str, Any]], *, limits: ServerLimits | None = None
    ) -> AsyncIterator[ToolHub]:
        """Start a hub for the duration of a ``with`` block."""
        hub = cls(connections, limits=limits)
        try:
            await hub.start()
            yield hub
        finally:
            await hub.close()

    @property
    def server_errors(self) -> dict[str, str]:
        """Why each server that is down is down (did not start, exited, stopped answering)."""
        return {name: server.error for name, server in self.servers.items() if server.error}

    async def start(self) -> None:
        """Start every server at once and list its tools; a server that fails is reported, not fatal."""
        await asyncio.gather(*(server.start() for server in self.servers.values()))
        for name, server in self.servers.items():
            if server.error:
                log.warning("MCP server %r unavailable: %s", name, server.error)
            for tool in server.tools.values():
                qualified = f"{name}.{tool.name}"
                schema = normalise_schema(tool.args_schema)
                self.specs[qualified] = ToolSpec(qualified, name, tool.description or "", schema)

    async def close(self) -> None:
        """Stop every server (and its process, for stdio); never raises."""
        await asyncio.gather(*(server.close() for server in self.servers.values()))

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
        spec = self.specs[qualified]
        try:
            message = await self.servers[spec.server].invoke(
                qualified[len(spec.server) + 1 :], args, timeout_s=timeout_s
            )
        except ServerUnavailable as exc:
            error = f"tool {qualified} unavailable: MCP server {spec.server} {exc}"
            return ToolOutcome(qualified, args, False, "", error, ms=_ms(clock), started_at=started)
        except TimeoutError:
            error = f"tool {qualified} timed out after {timeout_s:g} s"
            return ToolOutcome(qualified, args, False, "", error, ms=_ms(clock), started_at=started)
        except Exception as exc:  # a crashed server or a bad argument
            error = f"tool {qualified} failed: {exception_text(exc)}"
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
