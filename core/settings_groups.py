"""The groups of run-wide settings that live on this floor: budgets, caches, HTTP and evaluation.

Each field names its environment variable and meaning (``models/env_settings.py``);
``core/settings.py`` nests them in :class:`core.settings.Settings`.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import SecretStr

from models.env_settings import SettingsGroup, setting


class Budgets(SettingsGroup):
    """Bounds on every loop of a run; when one runs out the Writer answers with what exists."""

    env_prefix: ClassVar[str] = "AISEARCH_BUDGET_"

    max_replans: int = setting(2, ge=0, doc="re-plans and augmentations per turn")
    max_waves: int = setting(6, ge=1, doc="waves of ready tasks")
    max_tool_calls: int = setting(12, ge=0, doc="MCP tool calls per turn")
    max_tasks: int = setting(8, ge=1, doc="tasks in one plan")
    max_executor_rounds: int = setting(
        2, ge=1, doc="rounds of a task (call, judge, refine); search rounds of a planned search task"
    )
    max_hops: int = setting(
        2, ge=1, doc="searches of the serial (multi-hop) strategy for a question kept whole"
    )
    max_chain_hops: int = setting(
        4, ge=2, doc="questions of a hop chain (MuSiQue asks up to 4); a longer split is searched whole"
    )
    search_k: int = setting(5, ge=1, le=20, doc="passages per search call (1–20)")
    max_parallel: int = setting(
        4, ge=1, doc="tasks running at once (streamed ones too); 1 runs a plan strictly one task at a time"
    )
    tool_timeout_s: float = setting(30.0, gt=0, doc="seconds per tool call")
    tool_retries: int = setting(
        1, ge=0, doc="same-tool retries of a call that returned an error (a timeout switches to a backup)"
    )
    tool_backups: int = setting(
        2, ge=0, doc="peers of the failed tool's toolkit tried in turn; 0 turns backups off"
    )
    wall_clock_s: float = setting(900.0, gt=0, doc="seconds per turn")


class CacheSettings(SettingsGroup):
    """The semantic answer cache and the tool-call cache (``tools/cache/``, ``agents/recall.py``).

    They serve the runs of ``ask``, ``serve``, ``mcp`` and LangGraph Server; evaluations and
    benchmarks run without them (``open_run(cache=False)``, its default).
    """

    env_prefix: ClassVar[str] = "AISEARCH_CACHE_"

    answers: bool = setting(
        True, doc="serve an earlier answer to a question asked again or reworded, before the team runs"
    )
    similarity: float = setting(
        0.9,
        gt=0,
        le=1,
        doc="an earlier question (and its conversation) must be at least this similar (MiniLM cosine), "
        "and the near-miss guard must find no differing name, number or swapped word",
    )
    context_turns: int = setting(
        2, ge=0, doc="earlier user turns of the thread compared along with the question"
    )
    answer_ttl_hours: float = setting(168.0, gt=0, doc="an answer is served for at most this long")
    max_answers: int = setting(1000, ge=1, doc="answers kept; the least recently used go first")
    tools: bool = setting(
        True, doc="answer an identical call of a read-only, closed-world tool from an earlier one"
    )
    tool_ttl_minutes: float = setting(60.0, gt=0, doc="a tool result is served for at most this long")
    max_tool_calls: int = setting(1000, ge=1, doc="tool results kept; the least recently used go first")


class HttpSettings(SettingsGroup):
    """``aisearch serve``: who may call the API and how much one request may take."""

    env_only: ClassVar[bool] = True

    token: SecretStr | None = setting(
        None,
        env="AISEARCH_HTTP_TOKEN",
        shown="unset: no auth",
        doc="require `Authorization: Bearer <token>` on every route but `/health` and the API docs; "
        "not a model key (a warning when it equals one)",
    )
    hosts: str = setting(
        "",
        env="AISEARCH_HTTP_HOSTS",
        shown="loopback names (plus the bound address)",
        doc="comma-separated `Host` headers the API answers (421 otherwise: DNS rebinding); `*` turns the check off",
    )
    max_body_bytes: int = setting(
        64 * 1024,
        gt=0,
        env="AISEARCH_MAX_BODY_BYTES",
        doc="largest request body (also `--max-body-bytes`); 413 above it",
    )
    max_runs: int = setting(
        32, gt=0, env="AISEARCH_MAX_RUNS", doc="runs in flight per server process; one more gets 503"
    )
    run_timeout_s: float = setting(
        900.0, gt=0, env="AISEARCH_RUN_TIMEOUT_S", doc="a run's deadline; past it the request gets 504"
    )


class EvalSettings(SettingsGroup):
    """``aisearch eval``: the judge endpoint's key and the BFCL data."""

    env_only: ClassVar[bool] = True

    judge_api_key: SecretStr | None = setting(
        None,
        env="AISEARCH_JUDGE_API_KEY",
        shown="the Writer's key",
        doc="the key of the judge endpoint (`--judge-base-url`); sent to that endpoint only",
    )
    bfcl_wheel: Path | None = setting(
        None,
        env="AISEARCH_BFCL_WHEEL",
        shown="downloaded once",
        doc="a local copy of the pinned BFCL wheel (its sha256 is checked)",
    )
