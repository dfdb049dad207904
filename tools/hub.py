"""The MCP servers of a run: tools discovered once, calls with timeouts, every failure as data.

``langchain-mcp-adapters`` opens a new session per call unless a session is held open; the hub
holds one long-lived session per server (``tools/session.py``), each owned by its own task, so one
server's crash, garbage output or hang is that server's failure alone. Tool schemas are normalised
(``tools/schema.py``) before the planner and executor read them, and a tool's document refined by
DRAFT (``tools/draft.py``) replaces its original while the original is unchanged.

Servers start lazily: a server whose tools the catalogue already describes (``described``) is
started only when something needs it (:meth:`ToolHub.ensure`, or the first call of one of its
tools), concurrently with the others, each within its own start timeout; until then its tools are
the catalogue's descriptions. A server the catalogue does not describe starts when the hub opens,
as do the ``eager`` ones (the document server the Master probes). A server that does not start
makes each call of its tools fail with the reason, as data.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import (
    Any,
    NotRequired,  # pydantic reads the state's records on 3.11 too
)

from langchain_core.messages import ToolMessage
from typing_extensions import TypedDict

from tools.refinements import original_document, refined_document
from tools.schema import normalise_schema, type_label
from tools.session import ServerLimits, ServerSession, ServerUnavailable, exception_text

log = logging.getLogger(__name__)
MAX_OUTPUT_CHARS = 6000
QUERY_ARGS = ("query", "q", "search_query", "keywords")


class CandidateTool(TypedDict):
    """A tool inside this query's capability boundary (``ToolSpec.brief()`` plus its rank score)."""

    name: str
    description: str
    args: dict[str, str]
    server: str
    score: float | None
    needs: NotRequired[dict[str, str]]  # argument → the tool that produces its identifier (tools/needs.py)
    intent: NotRequired[str]  # the part of the query it was retrieved for
    optional: NotRequired[list[str]]  # arguments its schema lists but does not require


@dataclass(frozen=True)
class ToolSpec:
    """What the planner and executor see of one tool: ``server.tool`` name, description, schema."""

    name: str
    server: str
    description: str
    parameters: dict[str, Any]
    # its MCP annotations say it is read-only and closed-world: calls may be cached (tools/cache/)
    cacheable: bool = False

    def brief(self) -> dict[str, Any]:
        """A compact description for prompts (name, description, argument names and types)."""
        props = self.parameters.get("properties", {})
        args = {key: type_label(value) for key, value in props.items()}
        return {"name": self.name, "description": self.description.split("\n")[0], "args": args}

    def optional_args(self) -> list[str]:
        """The arguments the schema lists but does not require; none when the schema has no
        ``required`` list (many servers leave it out, and then no argument is marked optional)."""
        required = self.parameters.get("required")
        if not isinstance(required, list):
            return []
        return [key for key in self.parameters.get("properties", {}) if key not in required]


def refined_spec(spec: ToolSpec, root: Path | None = None) -> ToolSpec:
    """``spec`` with the document DRAFT refined from its current one, when there is one
    (``tools/refinements.py``; ``root``: the tools directory, default the user's)."""
    document = refined_document(spec.name, spec.description, root)
    return spec if document == spec.description else replace(spec, description=document)


def original_spec(spec: ToolSpec, root: Path | None = None) -> ToolSpec:
    """``spec`` with its original document when the hub shows a refined one."""
    document = original_document(spec.name, spec.description, root)
    return spec if document == spec.description else replace(spec, description=document)


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
    cached: bool = False  # answered from the tool-call cache (tools/cache/tool_calls.py)


class ToolHub:
    """The MCP servers of a run, their tools, and calls to them."""

    def __init__(
        self,
        connections: dict[str, dict[str, Any]],
        *,
        limits: ServerLimits | None = None,
        described: Mapping[str, Sequence[ToolSpec]] | None = None,
        descriptions: Mapping[str, str] | None = None,
        on_started: Callable[[str, ServerSession], None] | None = None,
    ) -> None:
        """Prepare (not start) a hub over ``connections`` (langchain-mcp-adapters connection dicts).

        Args:
            connections: Server name -> connection.
            limits: Start, ping and stop timeouts of every server.
            described: Server name -> its tools as the catalogue describes them (such a server
                starts lazily); servers not in ``connections`` are ignored.
            descriptions: Server name -> what it does (the catalogue's text), for tool retrieval.
            on_started: Called with each server that started and listed its tools.
        """
        self.connections = connections
        self.limits = limits or ServerLimits()
        self.servers = {name: ServerSession(name, conn, self.limits) for name, conn in connections.items()}
        self.described = {
            name: list(specs) for name, specs in (described or {}).items() if name in connections
        }
        self.descriptions = {name: text for name, text in (descriptions or {}).items() if name in connections}
        self.on_started = on_started
        self.specs: dict[str, ToolSpec] = {}
        # tool -> its own document, where the hub shows one DRAFT refined: retrieval indexes this one
        self.originals: dict[str, str] = {}
        for specs in self.described.values():
            for spec in specs:
                self._show(spec)
        self._starts: dict[str, asyncio.Task[None]] = {}

    def _show(self, spec: ToolSpec) -> None:
        """Offer ``spec`` with the document DRAFT refined for it, if any, keeping its own in
        :attr:`originals`."""
        shown = refined_spec(spec)
        self.specs[spec.name] = shown
        if shown is spec:
            self.originals.pop(spec.name, None)
        else:
            self.originals[spec.name] = spec.description

    def retrieval_document(self, name: str) -> str:
        """The document tool retrieval indexes ``name`` by: the tool's own, never DRAFT's refinement.

        DRAFT rewrites a document for the model that calls the tool (its trials check calls, not
        retrieval), and a small rewriter drops what retrieval matches questions against: its
        rewrite of ``clock.date_diff`` lost the example questions, so "how many days between two
        dates" found ``clock.shift_date``'s instead.
        """
        return self.originals[name] if name in self.originals else self.specs[name].description

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        connections: dict[str, dict[str, Any]],
        *,
        limits: ServerLimits | None = None,
        described: Mapping[str, Sequence[ToolSpec]] | None = None,
        descriptions: Mapping[str, str] | None = None,
        eager: Iterable[str] = (),
        on_started: Callable[[str, ServerSession], None] | None = None,
    ) -> AsyncIterator[ToolHub]:
        """Start a hub for the duration of a ``with`` block: the servers the catalogue does not
        describe and the ``eager`` ones now, the others when they are needed."""
        hub = cls(
            connections, limits=limits, described=described, descriptions=descriptions, on_started=on_started
        )
        try:
            await hub.start([*hub.undescribed(), *eager])
            yield hub
        finally:
            await hub.close()

    @property
    def server_errors(self) -> dict[str, str]:
        """Why each server that is down is down (did not start, exited, stopped answering)."""
        return {name: server.error for name, server in self.servers.items() if server.error}

    def undescribed(self) -> list[str]:
        """The servers whose tools are known only once they start."""
        return [name for name in self.servers if name not in self.described]

    def started(self, name: str) -> bool:
        """Whether the server ``name`` was started (successfully or not)."""
        task = self._starts.get(name)
        return task is not None and task.done()

    def running_specs(self) -> dict[str, ToolSpec]:
        """The tools of the servers that are up now (no server is started to list them)."""
        up = {name for name, server in self.servers.items() if self.started(name) and not server.error}
        return {name: spec for name, spec in self.specs.items() if spec.server in up}

    async def start(self, names: Iterable[str] | None = None) -> None:
        """Start the servers ``names`` (default: every server) at once; a failure is reported, not fatal."""
        await self.ensure(self.servers if names is None else names)

    async def ensure(self, names: Iterable[str]) -> None:
        """Start those of ``names`` that have not started yet, concurrently, and wait for all of them.

        Each server starts once: a second caller waits for the same start. Unknown names are ignored.
        """
        waiting = self.prestart(names)
        if waiting:
            await asyncio.gather(*(asyncio.shield(task) for task in waiting))

    def prestart(self, names: Iterable[str]) -> list[asyncio.Task[None]]:
        """Begin starting those of ``names`` not started yet, without waiting (a call waits for its
        server's start); returns the start of each known name."""
        starts = []
        for name in dict.fromkeys(names):
            if name not in self.servers:
                continue
            if name not in self._starts:
                self._starts[name] = asyncio.create_task(self._start_one(name), name=f"mcp-start-{name}")
            starts.append(self._starts[name])
        return starts

    async def _start_one(self, name: str) -> None:
        server = self.servers[name]
        await server.start()
        if server.error:
            log.warning("MCP server %r unavailable: %s", name, server.error)
            return
        for qualified in [q for q, spec in self.specs.items() if spec.server == name]:
            del self.specs[qualified]  # the server's own listing replaces the catalogue's description
            self.originals.pop(qualified, None)
        for tool in server.tools.values():
            qualified = f"{name}.{tool.name}"
            schema = normalise_schema(tool.args_schema)
            self._show(ToolSpec(qualified, name, tool.description or "", schema, cacheable(tool.metadata)))
        if server.instructions and name not in self.descriptions:
            self.descriptions[name] = server.instructions
        if self.on_started is not None:
            try:
                self.on_started(name, server)
            except Exception as exc:  # noqa: BLE001 - a listing cache must never break a run
                log.warning("after MCP server %r started: %s", name, exc)

    async def close(self) -> None:
        """Stop every server (and its process, for stdio), starts in progress too; never raises."""
        for task in self._starts.values():
            task.cancel()  # a start in progress stops waiting; the server's close stops its process
        await asyncio.gather(*self._starts.values(), return_exceptions=True)
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
        await self.ensure([spec.server])
        if qualified not in self.specs:  # the started server does not list the catalogue's tool
            error = f"tool {qualified} is not offered by MCP server {spec.server}"
            return ToolOutcome(qualified, args, False, "", error, ms=_ms(clock), started_at=started)
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


def cacheable(annotations: Mapping[str, Any] | None) -> bool:
    """Whether a tool's MCP annotations (langchain-mcp-adapters puts them in the tool's metadata)
    let its calls be cached: read-only and closed-world, both stated, since the MCP defaults are
    the opposite (``tools/cache/tool_calls.py`` says which bundled tools are)."""
    if not annotations:
        return False
    return annotations.get("readOnlyHint") is True and annotations.get("openWorldHint") is False
