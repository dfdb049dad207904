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

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.config_files import read_config_text, validation_line
from tools.settings import docsearch_settings
from tools.web.config import WebSearchConfig, load_web_config

BUNDLED_SERVERS: dict[str, str] = {
    "python": "tools.servers.python_server",
    "clock": "tools.servers.clock_server",
}
HTTP_TRANSPORTS = {"streamable_http", "streamable-http", "http", "sse", "websocket"}


class ServerConfigError(ValueError):
    """The MCP server configuration is malformed."""


DOCSEARCH = "docsearch"
DOCSEARCH_MODULE = "tools.servers.docsearch_server"
WEBSEARCH = "websearch"
WEBSEARCH_MODULE = "tools.servers.websearch_server"
# started with every run, whatever its tools: the Master probes the documents before tools are selected
EAGER_SERVERS = (DOCSEARCH,)
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
    if name == "docsearch" and docsearch_settings().rerank:
        names += RERANK_SETTINGS
    return {**base_env(), **_settings(names)}


def have_document_index() -> bool:
    """Whether a document index exists (``aisearch index …`` was run), so docsearch has data to serve."""
    from tools.index.paths import default_index_dir

    collections = default_index_dir() / "collections"
    return collections.is_dir() and any((path / "state.json").exists() for path in collections.iterdir())


def bundled_connections(web: WebSearchConfig | None = None) -> dict[str, dict[str, Any]]:
    """stdio connections that start each bundled server with this interpreter.

    ``docsearch`` joins once a document index exists (``aisearch index PATH`` or ``--default``), so
    a run without documents does not start a server that would load an embedding model for nothing.
    ``websearch`` joins when web search is configured (``web``, default: the config file's
    ``[websearch]`` and the environment); it gets those settings and the chosen provider's key only.

    Raises:
        ConfigError: The web search settings are invalid.
    """
    modules = dict(BUNDLED_SERVERS)
    if have_document_index():
        modules["docsearch"] = DOCSEARCH_MODULE
    web = web if web is not None else load_web_config()
    if web.enabled:
        modules[WEBSEARCH] = WEBSEARCH_MODULE
    connections: dict[str, dict[str, Any]] = {
        name: {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", module],
            "env": bundled_env(name),
        }
        for name, module in modules.items()
    }
    if WEBSEARCH in connections:
        connections[WEBSEARCH]["env"] |= web.server_env()
    return connections


class StdioEntry(BaseModel):
    """An ``mcpServers`` entry that starts a program and speaks MCP over its stdio."""

    model_config = ConfigDict(extra="ignore")

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    env_passthrough: list[str] = Field(default_factory=list)
    cwd: str | None = None


class HttpEntry(BaseModel):
    """An ``mcpServers`` entry that reaches a running server at a URL."""

    model_config = ConfigDict(extra="ignore")

    url: str = Field(min_length=1)
    transport: str | None = None
    type: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)


def normalize_entry(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """Turn one ``mcpServers`` entry into a langchain-mcp-adapters connection.

    A stdio server's environment is ``base_env`` plus the entry's ``env`` values and the variables
    its ``env_passthrough`` names (those that are set).

    Raises:
        ServerConfigError: When the entry has neither ``command`` nor ``url``, or a value of the
            wrong type (``"args": "x"``, a number in ``env``, an unknown transport).
    """
    if not isinstance(entry, dict):
        raise ServerConfigError(f"mcpServers.{name} must be an object, got {type(entry).__name__}")
    if "command" not in entry and "url" not in entry:
        raise ServerConfigError(f"mcpServers.{name} needs either 'command' (stdio) or 'url' (HTTP)")
    try:
        if "command" in entry:
            return _stdio_connection(StdioEntry.model_validate(entry))
        return _http_connection(name, HttpEntry.model_validate(entry))
    except ValidationError as exc:
        raise ServerConfigError(validation_line(exc, f"mcpServers.{name}")) from None


def _stdio_connection(entry: StdioEntry) -> dict[str, Any]:
    passed = {key: os.environ[key] for key in entry.env_passthrough if key in os.environ}
    connection: dict[str, Any] = {"transport": "stdio", "command": entry.command, "args": entry.args}
    connection["env"] = {**base_env(), **passed, **entry.env}
    if entry.cwd:
        connection["cwd"] = entry.cwd
    return connection


def _http_connection(name: str, entry: HttpEntry) -> dict[str, Any]:
    transport = entry.transport or entry.type or "streamable_http"
    if transport not in HTTP_TRANSPORTS:
        raise ServerConfigError(f"mcpServers.{name}: unknown transport {transport!r}")
    connection: dict[str, Any] = {"transport": transport.replace("-", "_"), "url": entry.url}
    if transport == "http":
        connection["transport"] = "streamable_http"
    if entry.headers:
        connection["headers"] = entry.headers
    return connection


def user_connections(path: Path) -> dict[str, dict[str, Any] | None]:
    """The connections of an ``mcpServers`` JSON file by name (None for a ``"disabled"`` one).

    Raises:
        ServerConfigError: On a missing or unreadable file, invalid JSON or a malformed entry,
            in one line that names the file.
    """
    text = read_config_text(path, "MCP server config", ServerConfigError)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ServerConfigError(f"MCP server config {path} is not valid JSON: {exc}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ServerConfigError(f'{path}: expected an object with an "mcpServers" object')
    connections: dict[str, dict[str, Any] | None] = {}
    for name, entry in servers.items():
        if isinstance(entry, dict) and entry.get("disabled"):
            connections[name] = None
            continue
        try:
            connections[name] = normalize_entry(name, entry)
        except ServerConfigError as exc:
            raise ServerConfigError(f"{path}: {exc}") from None
    return connections


def load_connections(
    path: Path | None = None, web: WebSearchConfig | None = None
) -> dict[str, dict[str, Any]]:
    """The bundled servers overlaid with the servers of an ``mcpServers`` JSON file.

    ``web``: the web search settings (default: read from the config file and the environment).

    Raises:
        ServerConfigError: As :func:`user_connections`.
    """
    connections = bundled_connections(web)
    for name, connection in (user_connections(path) if path is not None else {}).items():
        if connection is None:
            connections.pop(name, None)
        else:
            connections[name] = connection
    return connections
