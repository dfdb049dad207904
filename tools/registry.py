"""MCP server configuration: the bundled servers plus the user's ``{"mcpServers": {...}}`` JSON.

The file format is the one Claude Desktop and LiveMCPBench use::

    {"mcpServers": {
        "python": {"command": "python", "args": ["-m", "tools.servers.python_server"]},
        "weather": {"url": "http://127.0.0.1:8000/mcp", "transport": "streamable_http"},
        "clock": {"disabled": true}
    }}

User entries add servers or replace bundled ones by name; ``"disabled": true`` removes one.

A stdio server starts with a clean environment (``base_env``: ``PATH``, ``HOME``, the locale and the
like), never aisearch's settings or keys. A bundled server also gets the settings it reads
(``BUNDLED_SETTINGS``); any other server gets a variable only when its entry names it, by value
(``"env": {"ROOT": "/tmp"}``) or by name from aisearch's own environment
(``"env_passthrough": ["GITHUB_TOKEN"]``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

BUNDLED_SERVERS: dict[str, str] = {
    "python": "tools.servers.python_server",
    "clock": "tools.servers.clock_server",
}
HTTP_TRANSPORTS = {"streamable_http", "streamable-http", "http", "sse", "websocket"}


class ServerConfigError(ValueError):
    """The MCP server configuration is malformed."""


DOCSEARCH_MODULE = "tools.servers.docsearch_server"
# started with every run, whatever its tools: the Master probes the documents before tools are selected
EAGER_SERVERS = ("docsearch",)
BASE_NAMES = ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
# The settings each bundled server reads; a name ending in "_" is a prefix.
BUNDLED_SETTINGS: dict[str, tuple[str, ...]] = {
    "python": ("AISEARCH_SANDBOX_",),
    "clock": ("AISEARCH_CLOCK_NOW",),
    "docsearch": (
        "AISEARCH_INDEX_DIR", "AISEARCH_INDEX_THREADS", "AISEARCH_DOCSEARCH_", "AISEARCH_DEFAULT_CORPUS_",
        "AISEARCH_CHROMA_URL",
    ),
}  # fmt: skip
# docsearch's optional LLM rerank calls a model: its endpoint and key, only when the rerank is on.
RERANK_SETTINGS = (
    "AISEARCH_RERANK_", "AISEARCH_CONFIG", "AISEARCH_MODEL", "AISEARCH_BASE_URL", "AISEARCH_API_KEY",
    "AISEARCH_EXECUTOR_", "AISEARCH_LOCAL_",
)  # fmt: skip


def base_env() -> dict[str, str]:
    """The clean environment every stdio server starts with: MCP's safe defaults and the locale."""
    from mcp.client.stdio import get_default_environment

    env = get_default_environment()
    env.update({key: os.environ[key] for key in BASE_NAMES if key in os.environ})
    return env


def _settings(names: tuple[str, ...]) -> dict[str, str]:
    return {
        key: value
        for key, value in os.environ.items()
        if any(key == name or (name.endswith("_") and key.startswith(name)) for name in names)
    }


def bundled_env(name: str) -> dict[str, str]:
    """The environment of the bundled server ``name``: ``base_env`` plus the settings it reads."""
    names = BUNDLED_SETTINGS.get(name, ())
    rerank = os.environ.get("AISEARCH_DOCSEARCH_RERANK", "").strip().lower() in ("1", "true", "yes", "on")
    if name == "docsearch" and rerank:
        names += RERANK_SETTINGS
    return {**base_env(), **_settings(names)}


def have_document_index() -> bool:
    """Whether a document index exists (``aisearch index …`` was run), so docsearch has data to serve."""
    from tools.index.paths import default_index_dir

    collections = default_index_dir() / "collections"
    return collections.is_dir() and any((path / "state.json").exists() for path in collections.iterdir())


def bundled_connections() -> dict[str, dict[str, Any]]:
    """stdio connections that start each bundled server with this interpreter.

    ``docsearch`` joins once a document index exists (``aisearch index PATH`` or ``--default``), so
    a run without documents does not start a server that would load an embedding model for nothing.
    """
    modules = dict(BUNDLED_SERVERS)
    if have_document_index():
        modules["docsearch"] = DOCSEARCH_MODULE
    return {
        name: {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", module],
            "env": bundled_env(name),
        }
        for name, module in modules.items()
    }


def normalize_entry(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """Turn one ``mcpServers`` entry into a langchain-mcp-adapters connection.

    A stdio server's environment is ``base_env`` plus the entry's ``env`` values and the variables
    its ``env_passthrough`` names (those that are set).

    Raises:
        ServerConfigError: When the entry has neither ``command`` nor ``url``, or a malformed
            ``env`` / ``env_passthrough``.
    """
    if not isinstance(entry, dict):
        raise ServerConfigError(f"mcpServers.{name} must be an object, got {type(entry).__name__}")
    transport = entry.get("transport") or entry.get("type")
    if "command" in entry:
        values, passthrough = entry.get("env", {}), entry.get("env_passthrough", [])
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise ServerConfigError(f"mcpServers.{name}.env must be an object of strings")
        if not isinstance(passthrough, list) or not all(isinstance(k, str) for k in passthrough):
            raise ServerConfigError(f"mcpServers.{name}.env_passthrough must be a list of variable names")
        passed = {key: os.environ[key] for key in passthrough if key in os.environ}
        env = {**base_env(), **passed, **values}
        connection = {"transport": "stdio", "command": entry["command"], "args": list(entry.get("args", []))}
        connection["env"] = env
        if entry.get("cwd"):
            connection["cwd"] = entry["cwd"]
        return connection
    if "url" in entry:
        transport = transport or "streamable_http"
        if transport not in HTTP_TRANSPORTS:
            raise ServerConfigError(f"mcpServers.{name}: unknown transport {transport!r}")
        connection = {"transport": transport.replace("-", "_"), "url": entry["url"]}
        if transport == "http":
            connection["transport"] = "streamable_http"
        if entry.get("headers"):
            connection["headers"] = entry["headers"]
        return connection
    raise ServerConfigError(f"mcpServers.{name} needs either 'command' (stdio) or 'url' (HTTP)")


def load_connections(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The bundled servers overlaid with the servers of an ``mcpServers`` JSON file.

    Raises:
        ServerConfigError: On a missing file, invalid JSON or a malformed entry.
    """
    connections = bundled_connections()
    if path is None:
        return connections
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ServerConfigError(f"MCP server config not found: {path}") from exc
    except json.JSONDecodeError as exc:
        raise ServerConfigError(f"MCP server config {path} is not valid JSON: {exc}") from exc
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ServerConfigError(f'{path}: expected an object with an "mcpServers" object')
    for name, entry in servers.items():
        if isinstance(entry, dict) and entry.get("disabled"):
            connections.pop(name, None)
            continue
        connections[name] = normalize_entry(name, entry)
    return connections
