"""Tool listings of servers seen running, cached on disk, so a later run knows a server's tools
without starting it (and can start it only when its tools are selected).

A listing is keyed by the server's name and how it starts (command, arguments, URL; for
``python -m module`` also the module file's content), never by its environment: a changed command
or a changed bundled server is listed afresh. A stale listing is harmless: the server's own
listing replaces it once it starts, and the cache is rewritten then.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.catalog.model import CatalogServer, CatalogTool
from tools.catalog.paths import default_tools_dir
from tools.index.jsonfiles import read_json, write_json

log = logging.getLogger(__name__)


def listings_dir(root: Path | None = None) -> Path:
    """Where the listings live: ``<tools dir>/listings``."""
    return (root or default_tools_dir()) / "listings"


def _module_digest(args: Sequence[Any]) -> str:
    """The content hash of the module a ``-m module`` command runs (empty when there is none)."""
    args = [str(arg) for arg in args]
    if "-m" not in args or args.index("-m") + 1 >= len(args):
        return ""
    try:
        spec = importlib.util.find_spec(args[args.index("-m") + 1])
    except (ImportError, ValueError):
        return ""
    origin = spec.origin if spec else None
    if not origin or not Path(origin).is_file():
        return ""
    return hashlib.sha1(Path(origin).read_bytes()).hexdigest()


def listing_key(name: str, connection: dict[str, Any]) -> str:
    """The cache key of a server: its name, command, arguments and URL (not its environment)."""
    args = list(connection.get("args") or [])
    identity = {
        "name": name,
        "command": connection.get("command"),
        "args": [str(arg) for arg in args],
        "url": connection.get("url"),
        "module": _module_digest(args),
    }
    return hashlib.sha1(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def _path(name: str, connection: dict[str, Any], root: Path | None) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:60]
    return listings_dir(root) / f"{safe}-{listing_key(name, connection)}.json"


def cached_listing(name: str, connection: dict[str, Any], root: Path | None = None) -> CatalogServer | None:
    """The server as it last listed itself with this connection, or None."""
    raw = read_json(_path(name, connection, root), None)
    if not isinstance(raw, dict) or not isinstance(raw.get("tools"), list):
        return None
    tools = tuple(
        CatalogTool(str(t["name"]), str(t.get("description") or ""), dict(t.get("parameters") or {}))
        for t in raw["tools"]
        if isinstance(t, dict) and t.get("name")
    )
    return CatalogServer(name, str(raw.get("description") or ""), tools, "", {}, "listing")


def store_listing(
    name: str,
    connection: dict[str, Any],
    description: str,
    tools: Sequence[CatalogTool],
    root: Path | None = None,
) -> None:
    """Remember what the server ``name`` listed (rewritten only when it changed)."""
    path = _path(name, connection, root)
    value = {
        "server": name,
        "description": description,
        "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools],
    }
    if read_json(path, None) != value:
        write_json(path, value)
        log.info("cached the tool listing of MCP server %r (%d tools)", name, len(tools))
