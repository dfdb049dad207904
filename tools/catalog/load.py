"""Reading catalogues: LiveMCPBench-style entries, ``mcpServers`` files and the bundled servers.

Two file formats describe servers without running them:

* a catalogue (LiveMCPBench's ``tools.json``): a list of entries (or ``{"servers": [...]}``), each
  ``{"name", "description", "category", "config": {"mcpServers": {...}},
  "tools": {"<key>": {"tools": [{"name", "description", "inputSchema"}]}}}``;
* an ``mcpServers`` file (Claude Desktop, LiveMCPBench's ``config``, the user's ``mcp.json``): each
  entry may carry ``"description"`` and ``"tools"`` (a list of ``{"name", "description",
  "inputSchema"}``) so the server is indexed without being started; ``"disabled": true`` removes it.

The bundled servers describe themselves: their FastMCP objects are imported and listed in-process.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from models.config_files import read_config_text
from tools.catalog.model import Catalog, CatalogServer, CatalogTool
from tools.registry import BUNDLED_SERVERS, DOCSEARCH_MODULE, WEBSEARCH, WEBSEARCH_MODULE, bundled_connections

log = logging.getLogger(__name__)


class CatalogError(ValueError):
    """A catalogue file is missing, not JSON, or not in a known format."""


def _list(value: Any) -> list[Any]:
    """``value`` when it is a list, else nothing (a catalogue's optional lists may be junk)."""
    return value if isinstance(value, list) else []


def _tool(raw: Any) -> CatalogTool | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        return None
    schema = raw.get("inputSchema") or raw.get("parameters") or {}
    return CatalogTool(
        raw["name"], str(raw.get("description") or ""), schema if isinstance(schema, dict) else {}
    )


def entry_server(entry: object, source: str) -> CatalogServer:
    """One LiveMCPBench-style catalogue entry as a server record."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise CatalogError(f"{source}: a catalogue entry needs a string 'name'")
    groups = entry.get("tools") or {}
    listed = (
        [raw for group in groups.values() if isinstance(group, dict) for raw in _list(group.get("tools"))]
        if isinstance(groups, dict)
        else _list(groups)
    )
    tools = tuple(t for t in (_tool(raw) for raw in listed) if t)
    config = entry.get("config")
    servers = config.get("mcpServers") if isinstance(config, dict) else None
    return CatalogServer(
        id=entry["name"],
        description=str(entry.get("description") or "").strip(),
        tools=tools,
        category=str(entry.get("category") or ""),
        connections=dict(servers) if isinstance(servers, dict) else {},
        source=source,
    )


def mcp_servers(servers: dict[str, Any], source: str) -> tuple[list[CatalogServer], list[str]]:
    """The servers of an ``mcpServers`` object, and the names it disables."""
    found, disabled = [], []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise CatalogError(f"{source}: mcpServers.{name} must be an object")
        if entry.get("disabled"):
            disabled.append(name)
            continue
        tools = tuple(t for t in (_tool(raw) for raw in _list(entry.get("tools"))) if t)
        plain = {
            key: value for key, value in entry.items() if key not in ("description", "tools", "category")
        }
        found.append(
            CatalogServer(
                id=name,
                description=str(entry.get("description") or "").strip(),
                tools=tools,
                category=str(entry.get("category") or ""),
                connections={name: plain},
                source=source,
            )
        )
    return found, disabled


def read_catalog_file(path: Path) -> tuple[list[CatalogServer], list[str]]:
    """The servers a catalogue or ``mcpServers`` file describes, and the names it disables.

    Raises:
        CatalogError: On a missing, unreadable or non-UTF-8 file, invalid JSON or an unknown format.
    """
    text = read_config_text(path, "catalogue", CatalogError)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"catalogue {path} is not valid JSON: {exc}") from exc
    source = str(path)
    if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
        return mcp_servers(data["mcpServers"], source)
    entries = data.get("servers") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise CatalogError(f'{path}: expected a list of catalogue entries or an object with "mcpServers"')
    return [entry_server(entry, source) for entry in entries], []


async def bundled_servers() -> list[CatalogServer]:
    """The bundled servers (the ones a run starts), described by their own FastMCP tool listing."""
    modules = {**BUNDLED_SERVERS, "docsearch": DOCSEARCH_MODULE, WEBSEARCH: WEBSEARCH_MODULE}
    servers = []
    for name, connection in bundled_connections().items():
        mcp = importlib.import_module(modules[name]).mcp
        listed = await mcp.list_tools()
        tools = tuple(CatalogTool(t.name, t.description or "", dict(t.inputSchema or {})) for t in listed)
        description = (mcp.instructions or "").strip()
        servers.append(CatalogServer(name, description, tools, "", {name: connection}, "bundled"))
    return servers


async def load_catalog(
    files: Iterable[Path] = (), *, mcp_config: Path | None = None, bundled: bool = True
) -> Catalog:
    """The catalogue: the bundled servers, then each file in order, then the user's ``mcp.json``.

    A later server with the same id replaces an earlier one; a ``"disabled"`` entry removes it.

    Raises:
        CatalogError: When a file cannot be read.
    """
    catalog = Catalog()
    for server in await bundled_servers() if bundled else []:
        catalog.add(server)
    for path in [*files, *([mcp_config] if mcp_config and Path(mcp_config).exists() else [])]:
        servers, disabled = read_catalog_file(Path(path))
        for server in servers:
            catalog.add(server)
        for name in disabled:
            catalog.servers.pop(name, None)
    log.info("catalogue: %d servers, %d tools", len(catalog), catalog.tool_count())
    return catalog
