"""Run-wide settings: the model settings plus budgets, paths and tool selection.

Precedence (highest first): environment variables, the config file, built-in defaults. The file
and the model part are read by ``models/config.py`` (the floor below); this module adds::

    [budgets]
    max_replans = 2

    [paths]
    db = "~/.local/share/aisearch/threads.sqlite"   # or a postgresql:// URL: threads in Postgres
    mcp_config = "./mcp.json"      # default: ~/.config/aisearch/mcp.json when it exists
    tool_catalogs = ["~/catalog.json"]             # servers described without running them

    [docs_server]
    enabled = true
    idle_minutes = 30

    [websearch]                       # tools/web/config.py
    searxng_url = "http://127.0.0.1:8888"

    [cache]                           # the answer and tool-call caches (docs/cache.md)
    answers = true
    similarity = 0.9

    tool_candidates = 5               # top-level keys
    tool_synthetic_queries = false    # retrieve over `aisearch tools augment`'s queries too
    toolkit_k = 0                     # toolkits of equivalent tools; 0: k by silhouette
    document_probe_similarity = 0.45
    document_probe_floor = 0.3        # below it, a factual question may be answered from memory
    writer_source_chars = 2800        # the Writer's sources cut to what matters (0: whole passages)
    routing = "cheap"
    stream_plan = true                # tasks of the first plan start while it is written

Environment: ``AISEARCH_DB``, ``AISEARCH_MCP_CONFIG``, ``AISEARCH_TOOL_CATALOGS`` (paths joined by
``:``), ``AISEARCH_ROUTING``, ``AISEARCH_STREAM_PLAN`` (0 writes the whole plan first), ``AISEARCH_TOOL_SYNTHETIC_QUERIES`` (1 retrieves over the synthetic queries), ``AISEARCH_BUDGET_<NAME>`` (for example ``AISEARCH_BUDGET_MAX_REPLANS=1``), ``AISEARCH_DOCS_SERVER`` (0 turns the long-lived document server
off), ``AISEARCH_DOCS_SERVER_IDLE_MINUTES``, ``AISEARCH_CACHE_<KEY>`` (for example
``AISEARCH_CACHE_ANSWERS=0``), and the model variables of ``models/config.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from models.config import ConfigError, ModelSettings, default_config_path, model_values, read_config
from models.config_files import validation_line
from tools.web.config import WebSearchConfig, web_config

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_HEADER = b"SQLite format 3\x00"


class Budgets(BaseModel):
    """Bounds on every loop of a run; when one runs out the Writer answers with what exists."""

    max_replans: int = Field(default=2, ge=0)
    max_waves: int = Field(default=6, ge=1)
    max_tool_calls: int = Field(default=12, ge=0)
    max_tasks: int = Field(default=8, ge=1)
    max_executor_rounds: int = Field(default=2, ge=1)
    max_hops: int = Field(default=2, ge=1)
    max_chain_hops: int = Field(default=4, ge=2)  # questions of a hop chain (MuSiQue asks up to 4)
    search_k: int = Field(default=5, ge=1, le=20)
    max_parallel: int = Field(default=4, ge=1)  # tasks running at once; 1: strictly one at a time
    tool_timeout_s: float = Field(default=30.0, gt=0)
    tool_retries: int = Field(default=1, ge=0)  # same-tool retries of a call that errored (not timed out)
    tool_backups: int = Field(default=2, ge=0)  # toolkit peers tried after a failed call; 0 turns backups off
    wall_clock_s: float = Field(default=900.0, gt=0)


class DocsServer(BaseModel):
    """The long-lived document server the CLI starts and reuses (``tools/docs_server.py``)."""

    enabled: bool = True
    idle_minutes: float = Field(default=30.0, gt=0)  # it exits after this long without a request


class CacheSettings(BaseModel):
    """The semantic answer cache and the tool-call cache (``tools/cache/``, ``agents/recall.py``).

    They serve the runs of ``ask``, ``serve``, ``mcp`` and LangGraph Server; evaluations and
    benchmarks run without them (``open_run(cache=False)``, its default).
    """

    answers: bool = True  # earlier answers served for the same question asked again or reworded
    # an earlier question (and its conversation) must be at least this similar (MiniLM cosine);
    # the near-miss guard (tools/cache/near_miss.py) must also find no differing name, number or word
    similarity: float = Field(default=0.9, gt=0, le=1)
    context_turns: int = Field(default=2, ge=0)  # earlier user turns compared with the question's
    answer_ttl_hours: float = Field(default=168.0, gt=0)  # an answer is served for a week at most
    max_answers: int = Field(default=1000, ge=1)  # the least recently used go first
    tools: bool = True  # identical calls of read-only, closed-world tools answered from earlier ones
    tool_ttl_minutes: float = Field(default=60.0, gt=0)
    max_tool_calls: int = Field(default=1000, ge=1)


class Settings(ModelSettings):
    """Everything a run needs to know that is not in the question."""

    budgets: Budgets = Budgets()
    docs_server: DocsServer = DocsServer()
    # web search (tools/web/config.py): off until a SearxNG URL or a provider key is set
    websearch: WebSearchConfig = WebSearchConfig()
    db_path: Path = Path("~/.local/share/aisearch/threads.sqlite").expanduser()
    # a postgresql:// URL: the threads live in Postgres (langgraph-checkpoint-postgres), not in db_path
    db_url: str | None = None
    mcp_config: Path | None = None
    # catalogue files (LiveMCPBench format or mcpServers with "tools"): their startable servers
    # join every run's catalogue and start only when their tools are selected
    tool_catalogs: list[Path] = Field(default_factory=list)
    tool_candidates: int = Field(default=5, ge=1)
    # retrieve tools over TURA's synthetic queries (`aisearch tools augment`) as well as over their
    # descriptions; off by default: the local 1.5B's queries lowered server Recall@5 (0.83 -> 0.74)
    tool_synthetic_queries: bool = False
    # toolkits of equivalent tools (tools/toolkits.py): k-means++ clusters, k by silhouette when 0
    toolkit_k: int = Field(default=0, ge=0)
    toolkit_seed: int = 0
    # a toolkit peer is a backup only when its description is at least this similar (MiniLM cosine):
    # a small catalogue's clusters also hold tools that merely share a theme
    backup_similarity: float = Field(default=0.6, ge=0, le=1)
    # the Master searches the local documents before answering from memory when a quick probe finds
    # a passage at least this similar to the question (MiniLM cosine; 0 < x <= 1; 1 turns it off)
    document_probe_similarity: float = Field(default=0.45, gt=0, le=1)
    # a factual question is answered from memory only when the probe's best passage is less similar
    # than this: anything above it is on the documents' topic, so they are searched first
    document_probe_floor: float = Field(default=0.3, gt=0, le=1)
    # the Writer reads its sources cut to this many characters of the sentences that matter for
    # the question (about what single-shot RAG reads); 0 reads whole passages
    writer_source_chars: int = Field(default=2800, ge=0)
    # who decides the route: "cheap" (rules, the document probe and the route classifier; the
    # Master's LLM only for what they leave open) or "llm" (the Master's LLM for every query)
    routing: Literal["cheap", "llm"] = "cheap"
    # the Planner's first plan is streamed and a task starts as soon as its line is written and its
    # dependencies are met (LLMCompiler's task fetching, agents/plan_stream.py); false: the whole
    # plan first, then its waves
    stream_plan: bool = True
    # human in the loop (core/human.py), set per run only (``ask --interactive``/``--review-plan``,
    # the HTTP config), never from the file or the environment: evals and scripts never stop
    # clarify: the Master may pause the run to ask what an ambiguous question means
    clarify: bool = False
    # review_plan: the run pauses after the Planner's first plan for a person to approve, edit or reject it
    review_plan: bool = False
    cache: CacheSettings = CacheSettings()
    # set per run only (``ask --no-cache``, the HTTP config's ``cache: false``): the run reads neither
    # cache and answers afresh; what it finds is still stored for later runs
    bypass_cache: bool = False

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
        ConfigError: On a missing explicit file, invalid TOML or an invalid value.
    """
    env = os.environ if env is None else env
    path, data = read_config(config_path, env)
    values: dict[str, Any] = model_values(path, data, env)
    budgets = dict(data.get("budgets", {}))
    for name in Budgets.model_fields:
        if env.get(f"AISEARCH_BUDGET_{name.upper()}"):
            budgets[name] = env[f"AISEARCH_BUDGET_{name.upper()}"]
    values["budgets"] = budgets
    docs_server = dict(data.get("docs_server", {}))
    if env.get("AISEARCH_DOCS_SERVER"):
        docs_server["enabled"] = env["AISEARCH_DOCS_SERVER"].strip()  # 0/1, true/false, on/off
    if env.get("AISEARCH_DOCS_SERVER_IDLE_MINUTES"):
        docs_server["idle_minutes"] = env["AISEARCH_DOCS_SERVER_IDLE_MINUTES"]
    values["docs_server"] = docs_server
    values["websearch"] = web_config(data.get("websearch", {}), env, f"{path} [websearch]")
    cache = dict(data.get("cache", {}))
    for name in CacheSettings.model_fields:
        if env.get(f"AISEARCH_CACHE_{name.upper()}"):
            cache[name] = env[f"AISEARCH_CACHE_{name.upper()}"].strip()
    values["cache"] = cache
    paths = data.get("paths", {})
    db = env.get("AISEARCH_DB") or paths.get("db")
    if db and str(db).startswith(POSTGRES_SCHEMES):
        values["db_url"] = db
    elif db:
        values["db_path"] = Path(db).expanduser()
    mcp = env.get("AISEARCH_MCP_CONFIG") or paths.get("mcp_config")
    if mcp:
        values["mcp_config"] = Path(mcp).expanduser()
    elif user_mcp_config(env).exists():  # written by `aisearch tools add`
        values["mcp_config"] = user_mcp_config(env)
    catalogs = env.get("AISEARCH_TOOL_CATALOGS") or paths.get("tool_catalogs")
    if catalogs:
        items = catalogs.split(os.pathsep) if isinstance(catalogs, str) else list(catalogs)
        values["tool_catalogs"] = [Path(str(item)).expanduser() for item in items if str(item).strip()]
    for key in (
        "tool_candidates",
        "tool_synthetic_queries",
        "toolkit_k",
        "toolkit_seed",
        "backup_similarity",
        "document_probe_similarity",
        "document_probe_floor",
        "routing",
        "stream_plan",
    ):
        if key in data:
            values[key] = data[key]
    if env.get("AISEARCH_ROUTING"):
        values["routing"] = env["AISEARCH_ROUTING"]
    if env.get("AISEARCH_STREAM_PLAN"):
        values["stream_plan"] = env["AISEARCH_STREAM_PLAN"].strip()  # 0/1, true/false
    if env.get("AISEARCH_TOOL_SYNTHETIC_QUERIES"):
        values["tool_synthetic_queries"] = env["AISEARCH_TOOL_SYNTHETIC_QUERIES"].strip()  # 0/1, true/false
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration ({path} + environment): {validation_line(exc)}") from None
