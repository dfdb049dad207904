"""Run-wide settings: one :class:`Settings` object holds every setting aisearch reads.

Precedence (highest first): environment variables, the config file, built-in defaults. The file
is ``--config FILE``, else ``$AISEARCH_CONFIG``, else ``~/.config/aisearch/config.toml``; its
model part is read by ``models/config.py`` (the floor below). Each field names its environment
variable and its meaning (``models/env_settings.py``); ``docs/configuration.md`` lists them all
(``python -m core.settings_doc --write`` regenerates the table). Groups marked environment-only
are read by processes that read no config file (the MCP servers, the HTTP workers).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from core.settings_groups import Budgets, CacheSettings, EvalSettings, HttpSettings
from models.config import ConfigError, ModelSettings, default_config_path, model_values, read_config
from models.env_settings import (
    Directories,
    SettingsGroup,
    env_values,
    environment,
    error_line,
    load_group,
    setting,
)
from tools.settings import DocsearchSettings, DocsServer, IndexSettings, ServerSettings
from tools.web.config import WebSearchConfig, web_config

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_HEADER = b"SQLite format 3\x00"
FILE_KEYS = (
    "tool_candidates",
    "tool_synthetic_queries",
    "toolkit_k",
    "toolkit_seed",
    "backup_similarity",
    "document_probe_similarity",
    "document_probe_floor",
    "writer_source_chars",
    "writer_quotes",
    "routing",
    "stream_plan",
)
"""The top-level keys of the config file."""
FILE_GROUPS: dict[str, type[SettingsGroup]] = {
    "budgets": Budgets,
    "docs_server": DocsServer,
    "cache": CacheSettings,
}
"""The groups read from a table of the config file and the environment (besides the models'
and ``[websearch]``)."""
ENV_GROUPS: dict[str, type[SettingsGroup]] = {
    "http": HttpSettings,
    "index": IndexSettings,
    "docsearch": DocsearchSettings,
    "servers": ServerSettings,
    "directories": Directories,
    "evals": EvalSettings,
}
"""The groups read from the environment alone."""


class Settings(ModelSettings):
    """Everything a run needs to know that is not in the question."""

    budgets: Budgets = Budgets()
    docs_server: DocsServer = DocsServer()
    websearch: WebSearchConfig = WebSearchConfig()
    cache: CacheSettings = CacheSettings()
    http: HttpSettings = HttpSettings()
    index: IndexSettings = IndexSettings()
    docsearch: DocsearchSettings = DocsearchSettings()
    servers: ServerSettings = ServerSettings()
    directories: Directories = Directories()
    evals: EvalSettings = EvalSettings()
    db_path: Path = setting(
        Path("~/.local/share/aisearch/threads.sqlite").expanduser(),
        env="AISEARCH_DB",
        key="paths.db",
        shown="`~/.local/share/aisearch/threads.sqlite`",
        doc="the conversation threads: a SQLite file, or a `postgresql://` URL for Postgres (also `--db`)",
    )
    db_url: str | None = None  # set from paths.db when it is a postgresql:// URL
    mcp_config: Path | None = setting(
        None,
        env="AISEARCH_MCP_CONFIG",
        key="paths.mcp_config",
        shown="`~/.config/aisearch/mcp.json` when it exists",
        doc='your `{"mcpServers": …}` file (also `--mcp-config`); `aisearch tools add` writes there',
    )
    tool_catalogs: list[Path] = setting(
        default_factory=list,
        env="AISEARCH_TOOL_CATALOGS",
        key="paths.tool_catalogs",
        shown="none",
        doc="catalogue files (LiveMCPBench format, or `mcpServers` with `tools`; paths joined by `:`): "
        "servers described without running them, started when their tools are selected",
    )
    tool_candidates: int = setting(5, ge=1, doc="candidate tools offered to the Planner and Executor")
    tool_synthetic_queries: bool = setting(
        False,
        env="AISEARCH_TOOL_SYNTHETIC_QUERIES",
        doc="retrieve tools over `aisearch tools augment`'s synthetic queries too (with the local 1.5B "
        "they lowered server Recall@5 from 0.83 to 0.74)",
    )
    toolkit_k: int = setting(
        0,
        ge=0,
        doc="toolkits of equivalent tools (k-means++ over their descriptions); 0 chooses k by silhouette",
    )
    toolkit_seed: int = setting(0, doc="the k-means++ seed")
    backup_similarity: float = setting(
        0.6,
        ge=0,
        le=1,
        doc="a toolkit peer is a backup only when its description is at least this similar (MiniLM cosine)",
    )
    document_probe_similarity: float = setting(
        0.45,
        gt=0,
        le=1,
        doc="the Master searches the documents when a probe finds a passage at least this similar "
        "(MiniLM cosine; 1 turns the probe off)",
    )
    document_probe_floor: float = setting(
        0.3,
        gt=0,
        le=1,
        doc="a factual question is answered from memory only when the probe's best passage is less similar",
    )
    writer_source_chars: int = setting(
        2800,
        ge=0,
        doc="the Writer reads its sources cut to this many characters of what matters; 0: whole passages",
    )
    writer_quotes: bool = setting(
        True,
        env="AISEARCH_WRITER_QUOTES",
        doc="a short answer is explained by the source sentence that states it, cited, without a second "
        "model turn; off (or when no sentence states it): the Writer writes its explanation",
    )
    routing: Literal["cheap", "llm"] = setting(
        "cheap",
        env="AISEARCH_ROUTING",
        doc="`cheap`: rules, the document probe and the route classifier first, the Master's LLM for the "
        "rest; `llm`: the LLM decides every route",
    )
    stream_plan: bool = setting(
        True,
        env="AISEARCH_STREAM_PLAN",
        doc="the first plan is streamed and a task starts once its line is written and its dependencies "
        "are done; off: the whole plan first, then its waves",
    )
    # set per run only (``ask --interactive`` / ``--review-plan`` / ``--no-cache``, the HTTP config),
    # never from the file or the environment, so evaluations and scripts never stop for a person
    clarify: bool = False  # the Master may pause the run to ask what an ambiguous question means
    review_plan: bool = False  # the run pauses after the Planner's first plan for approval or edits
    bypass_cache: bool = False  # read neither cache and answer afresh (what it finds is still stored)

    def use_db(self, value: str) -> None:
        """Keep the threads in ``value``: a ``postgresql://`` URL, or the path of a SQLite file."""
        if value.startswith(POSTGRES_SCHEMES):
            self.db_url = value
        else:
            self.db_path, self.db_url = Path(value).expanduser(), None


def check_thread_store(settings: Settings) -> None:
    """Refuse, in one line and before anything is written, a SQLite thread store that cannot work.

    Raises:
        ConfigError: ``settings.db_path`` is a directory, a file that is not SQLite, not writable,
            or where it cannot be created. Nothing is checked for a Postgres URL.
    """
    if settings.db_url:
        return
    path = settings.db_path
    if path.is_dir():
        raise ConfigError(f"thread store {path} is a directory, not a SQLite file")
    if path.exists():
        try:
            with path.open("rb") as handle:
                head = handle.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise ConfigError(f"thread store {path} cannot be read: {exc.strerror or exc}") from None
        if head and head != SQLITE_HEADER:
            raise ConfigError(f"thread store {path} is not a SQLite database")
        if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            raise ConfigError(f"thread store {path} is not writable")
        return
    parent = next(folder for folder in path.parents if folder.exists())
    if not parent.is_dir():
        raise ConfigError(f"thread store {path} cannot be created: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"thread store {path} cannot be created: {parent} is not writable")


def user_mcp_config(env: Mapping[str, str] | None = None) -> Path:
    """The ``mcpServers`` file beside the default config file (``~/.config/aisearch/mcp.json``):
    where ``aisearch tools add`` writes when no ``mcp_config`` is set, read when it exists."""
    return default_config_path(env).parent / "mcp.json"


def load_settings(config_path: Path | str | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Build the effective settings: defaults, then the config file, then the environment.

    Args:
        config_path: An explicit config file (must exist); default ``$AISEARCH_CONFIG`` or
            ``~/.config/aisearch/config.toml`` (optional).
        env: The environment to read (default ``os.environ``).

    Raises:
        ConfigError: On a missing explicit file, invalid TOML or an invalid value (one line naming
            the key, and the variable when one set it).
    """
    env = environment(env)
    path, data = read_config(config_path, env)
    values: dict[str, Any] = model_values(path, data, env)
    for name, group in FILE_GROUPS.items():
        values[name] = load_group(group, env, data.get(name), where=f"{path} [{name}]", key=name)
    values["websearch"] = web_config(data.get("websearch", {}), env, f"{path} [websearch]")
    for name, group in ENV_GROUPS.items():
        values[name] = load_group(group, env, key=name)
    values.update({key: data[key] for key in FILE_KEYS if key in data})
    top = env_values(Settings, env)
    paths = data.get("paths", {})
    db = top.pop("db_path", None) or paths.get("db")
    if db and str(db).startswith(POSTGRES_SCHEMES):
        values["db_url"] = db
    elif db:
        values["db_path"] = Path(db).expanduser()
    mcp = top.pop("mcp_config", None) or paths.get("mcp_config")
    if mcp:
        values["mcp_config"] = Path(mcp).expanduser()
    elif user_mcp_config(env).exists():  # written by `aisearch tools add`
        values["mcp_config"] = user_mcp_config(env)
    catalogs = top.pop("tool_catalogs", None) or paths.get("tool_catalogs")
    if catalogs:
        items = catalogs.split(os.pathsep) if isinstance(catalogs, str) else list(catalogs)
        values["tool_catalogs"] = [Path(str(item)).expanduser() for item in items if str(item).strip()]
    top.pop("config_file", None)  # the path read, from model_values
    values.update(top)
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(
            f"invalid configuration ({path} + environment): {error_line(exc, Settings, env)}"
        ) from None
