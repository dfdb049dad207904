"""The catalogue of one run: the servers it may start and what is known of their tools before they do.

A run's servers are its connections (the bundled servers and the user's ``mcp.json``) plus the
startable servers of the configured catalogue files (``[paths] tool_catalogs``). Each is described,
without starting it, by the first of: its catalogue entry or ``mcp.json`` entry with ``"tools"``,
then the listing it gave when it last ran (``tools/catalog/listings.py``). A server known by none
of them starts with the run, lists its tools, and is lazy from the next run on.

:func:`hub_catalog` turns the hub's current view (described tools, then each started server's own
listing) back into a :class:`Catalog` for the tool index.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.catalog.listings import cached_listing, store_listing
from tools.catalog.load import CatalogError, read_catalog_file
from tools.catalog.model import Catalog, CatalogServer, CatalogTool
from tools.hub import ToolSpec
from tools.registry import ServerConfigError, normalize_entry
from tools.schema import normalise_schema

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from tools.hub import ToolHub
    from tools.session import ServerSession

log = logging.getLogger(__name__)


def listed_tool(tool: BaseTool) -> CatalogTool:
    """A started server's tool as its listing stores it (an MCP tool's schema is a JSON-schema dict)."""
    schema = tool.args_schema if isinstance(tool.args_schema, dict) else {}
    return CatalogTool(tool.name, tool.description or "", dict(schema))


@dataclass
class RunServers:
    """What a run's hub needs: every connection, and the servers described without starting them."""

    connections: dict[str, dict[str, Any]]
    described: dict[str, CatalogServer] = field(default_factory=dict)
    listings_root: Path | None = None

    def specs(self) -> dict[str, list[ToolSpec]]:
        """Server name -> its described tools as the planner and executor read them."""
        return {name: tool_specs(server) for name, server in self.described.items()}

    def descriptions(self) -> dict[str, str]:
        """Server name -> what it does."""
        return {name: server.description for name, server in self.described.items() if server.description}

    def remember(self, name: str, server: ServerSession) -> None:
        """Cache the listing of a server that started (the hub's ``on_started``)."""
        if name not in self.connections:
            return
        tools = [listed_tool(t) for t in server.tools.values()]
        store_listing(name, self.connections[name], server.instructions, tools, self.listings_root)


def tool_specs(server: CatalogServer) -> list[ToolSpec]:
    """A catalogue server's tools as :class:`ToolSpec` (``server.tool`` names, normalised schemas)."""
    return [
        ToolSpec(f"{server.id}.{tool.name}", server.id, tool.description, normalise_schema(tool.parameters))
        for tool in server.tools
    ]


def _first_connection(server: CatalogServer) -> dict[str, Any] | None:
    """The connection of a catalogue server that says how to start it, or None."""
    for key, entry in server.connections.items():
        if isinstance(entry, dict) and not entry.get("disabled"):
            try:
                return normalize_entry(key, entry)
            except ServerConfigError as exc:
                log.info("catalogue server %s cannot be started: %s", server.id, exc)
    return None


def run_servers(
    connections: Mapping[str, dict[str, Any]],
    *,
    catalogs: Iterable[Path] = (),
    mcp_config: Path | None = None,
    listings_root: Path | None = None,
) -> RunServers:
    """The run's servers: ``connections`` plus the catalogues' startable servers, described where possible.

    A catalogue file that cannot be read is logged and skipped (the run goes on without it).
    """
    found = RunServers(dict(connections), listings_root=listings_root)
    files = [*catalogs, *([mcp_config] if mcp_config and Path(mcp_config).exists() else [])]
    for path in files:
        try:
            servers, disabled = read_catalog_file(Path(path))
        except CatalogError as exc:
            log.warning("tool catalogue skipped: %s", exc)
            continue
        for server in servers:
            if server.id not in found.connections:
                connection = _first_connection(server)
                if connection is None:
                    continue  # described only, nothing to start: never a candidate
                found.connections[server.id] = connection
            if server.tools:
                found.described[server.id] = server
        for name in disabled:
            found.described.pop(name, None)
    for name, connection in found.connections.items():
        if name not in found.described:
            listed = cached_listing(name, connection, listings_root)
            if listed is not None:
                found.described[name] = listed
    return found


def hub_catalog(hub: ToolHub) -> Catalog:
    """The hub's tools as a catalogue (servers with at least one tool, in the hub's order), each
    by its own document (:meth:`ToolHub.retrieval_document`)."""
    by_server: dict[str, list[CatalogTool]] = {}
    for spec in hub.specs.values():
        tool = spec.name[len(spec.server) + 1 :]
        document = hub.retrieval_document(spec.name)  # the tool's own, not a DRAFT refinement
        by_server.setdefault(spec.server, []).append(CatalogTool(tool, document, spec.parameters))
    catalog = Catalog()
    for name in hub.servers:
        if by_server.get(name):
            catalog.add(CatalogServer(name, hub.descriptions.get(name, ""), tuple(by_server[name])))
    return catalog
