"""Editing the user's ``{"mcpServers": {...}}`` file: add, replace and remove servers.

Every entry is checked with :func:`tools.registry.normalize_entry` before the file is written, the
file's other keys and entries are kept as they were, and it is replaced atomically (a crash leaves
the old file or the new one, never half of one). Removing a bundled server writes
``{"disabled": true}``, which is how the file format removes one (``tools/registry.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from models.config_files import read_config_text, write_json_atomically
from tools.registry import BUNDLED_SETTINGS, ServerConfigError, normalize_entry

BUNDLED_NAMES = tuple(BUNDLED_SETTINGS)  # python, clock, docsearch


def read_servers(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The whole JSON document of ``path`` and its ``mcpServers`` object (both empty when no file).

    Raises:
        ServerConfigError: When the file is unreadable, not UTF-8, not JSON or has no ``mcpServers`` object.
    """
    if not path.exists():
        document: dict[str, Any] = {"mcpServers": {}}
        return document, document["mcpServers"]
    text = read_config_text(path, "MCP server config", ServerConfigError)
    try:
        document = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise ServerConfigError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise ServerConfigError(f'{path}: expected an object with an "mcpServers" object')
    servers = document.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ServerConfigError(f'{path}: "mcpServers" must be an object')
    return document, servers


def add_servers(path: Path, entries: dict[str, dict[str, Any]], *, replace: bool = False) -> list[str]:
    """Add ``entries`` (name -> ``mcpServers`` entry) to the file at ``path``; return the names added.

    Raises:
        ServerConfigError: On a malformed entry, or a name the file has already (unless ``replace``).
    """
    document, servers = read_servers(path)
    for name, entry in entries.items():
        if not name or any(c.isspace() or c == "." for c in name):
            raise ServerConfigError(f"server name {name!r}: use letters, digits, '-' or '_' (no dots)")
        normalize_entry(name, entry)
        existing = servers.get(name)
        if existing is not None and not existing.get("disabled") and not replace:
            raise ServerConfigError(f"{path} has a server {name!r} already (--replace to overwrite it)")
    servers.update(entries)
    write_json_atomically(path, document)
    return list(entries)


def remove_server(path: Path, name: str) -> str:
    """Remove ``name`` from the file at ``path`` (a bundled server is disabled); say what was done.

    Raises:
        ServerConfigError: When neither the file nor the bundled servers have ``name``.
    """
    document, servers = read_servers(path)
    if name in BUNDLED_NAMES:
        servers[name] = {"disabled": True}
        write_json_atomically(path, document)
        return f"disabled the bundled server {name!r} in {path}"
    if name not in servers:
        raise ServerConfigError(f"no server {name!r} in {path} (see `aisearch tools list`)")
    del servers[name]
    write_json_atomically(path, document)
    return f"removed {name!r} from {path}"
