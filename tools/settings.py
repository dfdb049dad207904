"""The settings of the index and the bundled servers, read from the environment only.

The CLI and the MCP servers it starts read these in different processes, and a server reads no
config file: the variables reach it through ``tools/registry.py``'s server environments. Each
group is read afresh on every call (``load_group``), so a changed variable takes effect at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from models.env_settings import SettingsGroup, load_group, setting

DEFAULT_COLLECTION = "docs"


class IndexSettings(SettingsGroup):
    """Where the document and tool indexes live, and how they are built."""

    env_only: ClassVar[bool] = True

    dir: Path | None = setting(
        None,
        env="AISEARCH_INDEX_DIR",
        shown="`$XDG_DATA_HOME/aisearch/index` (`~/.local/share/aisearch/index`)",
        doc="the document index",
    )
    tools_dir: Path | None = setting(
        None,
        env="AISEARCH_TOOLS_DIR",
        shown="`$XDG_DATA_HOME/aisearch/tools`",
        doc="the tool index, its caches and the synthetic queries",
    )
    chroma_url: str | None = setting(
        None,
        env="AISEARCH_CHROMA_URL",
        shown="none (embedded chromadb)",
        doc="keep passages and vectors in a chroma server (`http(s)://host:port`, `chromadb.HttpClient`)",
    )
    threads: int | None = setting(
        None, gt=0, env="AISEARCH_INDEX_THREADS", shown="every core", doc="torch threads for bulk embedding"
    )
    default_build: bool = setting(
        True,
        env="AISEARCH_DOCSEARCH_DEFAULT_BUILD",
        doc="index the standard-library docs on first use (also `ask --no-default-index`)",
    )
    corpus_modules: str | None = setting(
        None,
        env="AISEARCH_DEFAULT_CORPUS_MODULES",
        keep_empty=True,
        shown="a built-in list of common modules",
        doc="comma-separated modules whose docs form the default corpus (empty: none)",
    )
    corpus_topics: bool = setting(
        True,
        env="AISEARCH_DEFAULT_CORPUS_TOPICS",
        doc="the default corpus holds the pydoc language-reference topics",
    )


class DocsearchSettings(SettingsGroup):
    """The bundled ``docsearch`` server."""

    env_prefix: ClassVar[str] = "AISEARCH_DOCSEARCH_"
    env_only: ClassVar[bool] = True

    collection: str = setting(DEFAULT_COLLECTION, doc="the collection a search searches when it names none")
    rerank: bool = setting(False, doc="LLM listwise rerank of search results (the `rerank` model)")
    warmup: bool = setting(True, doc="load MiniLM when the server starts")


class DocsServer(SettingsGroup):
    """The long-lived document server the CLI starts and reuses (``tools/docs_server.py``)."""

    enabled: bool = setting(
        True,
        env="AISEARCH_DOCS_SERVER",
        doc="`ask` runs docsearch as a long-lived document server; off starts it over stdio for each run",
    )
    idle_minutes: float = setting(
        30.0, gt=0, env="AISEARCH_DOCS_SERVER_IDLE_MINUTES", doc="it exits after this long without a request"
    )


class ServerSettings(SettingsGroup):
    """The bundled python and clock servers."""

    env_only: ClassVar[bool] = True

    sandbox_namespaces: bool = setting(
        True,
        env="AISEARCH_SANDBOX_NAMESPACES",
        doc="the python sandbox runs in Linux namespaces; off is weaker (docs/security.md)",
    )
    clock_now: datetime | None = setting(
        None,
        env="AISEARCH_CLOCK_NOW",
        shown="the real time",
        doc="pin the clock server to an ISO timestamp (tests)",
    )


def index_settings(env: Mapping[str, str] | None = None) -> IndexSettings:
    """The index settings from the environment.

    Raises:
        ConfigError: A value of the wrong kind, naming its variable.
    """
    return load_group(IndexSettings, env, key="index")


def docsearch_settings(env: Mapping[str, str] | None = None) -> DocsearchSettings:
    """The docsearch settings from the environment.

    Raises:
        ConfigError: A value of the wrong kind, naming its variable.
    """
    return load_group(DocsearchSettings, env, key="docsearch")


def docs_server_settings(env: Mapping[str, str] | None = None) -> DocsServer:
    """The document server's settings from the environment alone (the CLI reads the file's too).

    Raises:
        ConfigError: A value of the wrong kind, naming its variable.
    """
    return load_group(DocsServer, env, key="docs_server")


def server_settings(env: Mapping[str, str] | None = None) -> ServerSettings:
    """The python and clock server settings from the environment.

    Raises:
        ConfigError: A value of the wrong kind, naming its variable.
    """
    return load_group(ServerSettings, env, key="servers")
