"""The tool-call cache: an identical call of a tool whose result depends only on its arguments and
on this machine's documents is answered from an earlier one, within a time to live.

Identical means the same ``server.tool`` and the same arguments as canonical JSON (keys sorted), over
the same document index (its fingerprint, ``tools/index/fingerprint.py``: a re-index changes what
a search returns). Only successful calls are kept.

**Which tools** (``tools.hub.cacheable``, read when a server lists its tools): those whose MCP tool annotations declare them read-only
(``readOnlyHint: true``) *and* closed-world (``openWorldHint: false``). The MCP defaults are the
opposite, so a tool that says nothing, or a third-party server's, is never cached. The bundled
servers declare: document search (``docsearch.search``, ``follow_links``, ``read``) and the
calculators (``python.calculate``, ``calculate_precise``) closed-world and cached; the clock (every
tool reads or may read the current time: ``now``, a date given as "today"), ``python.run_python``
(code may read the clock or random numbers) and web search (pages change) open-world, never cached.

Entries live in SQLite beside the thread store (``tool_cache.sqlite``), so they last across runs and
processes; expired entries and the least recently used beyond ``max_entries`` go on every write.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.cache.sqlite_store import LOCK, SqliteStore
from tools.hub import ToolOutcome

SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_calls (
    key TEXT PRIMARY KEY,
    corpus TEXT NOT NULL,
    tool TEXT NOT NULL,
    args TEXT NOT NULL,
    output TEXT NOT NULL,
    structured TEXT,
    created_at REAL NOT NULL,
    used_at REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0
);
"""


def canonical_args(args: Mapping[str, Any]) -> str:
    """The arguments as canonical JSON (sorted keys, no spaces): equal arguments, equal text."""
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def call_key(tool: str, args: Mapping[str, Any], corpus: str) -> str:
    """The cache key of a call of ``tool`` with ``args`` over the documents ``corpus``."""
    return hashlib.sha256(f"{corpus}\0{tool}\0{canonical_args(args)}".encode()).hexdigest()


@dataclass(frozen=True)
class ToolCacheLimits:
    """How long a call's result is served and how many are kept."""

    ttl_s: float = 3600.0
    max_entries: int = 1000


class ToolCallCache(SqliteStore):
    """Results of earlier tool calls in SQLite, by tool, canonical arguments and corpus."""

    table = "tool_calls"
    key = "key"

    def __init__(
        self, path: Path, limits: ToolCacheLimits | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        """Open (creating when missing) the cache at ``path``."""
        super().__init__(path, SCHEMA, clock)
        self.limits = limits or ToolCacheLimits()

    def get(self, tool: str, args: dict[str, Any], corpus: str) -> ToolOutcome | None:
        """The earlier result of this call, marked ``cached``, or None (never seen, or expired)."""
        started, clock = self.clock(), time.perf_counter()
        key = call_key(tool, args, corpus)
        with LOCK, self._connect() as db, db:
            row = db.execute(
                "SELECT output, structured, created_at FROM tool_calls WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            if row[2] < started - self.limits.ttl_s:
                db.execute("DELETE FROM tool_calls WHERE key = ?", (key,))
                return None
            db.execute("UPDATE tool_calls SET used_at = ?, hits = hits + 1 WHERE key = ?", (started, key))
        structured = json.loads(row[1]) if row[1] is not None else None
        ms = round((time.perf_counter() - clock) * 1000, 1)
        return ToolOutcome(tool, args, True, row[0], None, structured, ms, started, cached=True)

    def put(self, outcome: ToolOutcome, corpus: str) -> None:
        """Keep a successful call's result; drop expired entries, other corpora's and the least
        recently used beyond ``max_entries``."""
        if not outcome.ok:
            return
        now = self.clock()
        structured = json.dumps(outcome.structured, default=str) if outcome.structured is not None else None
        with LOCK, self._connect() as db, db:
            db.execute(
                "INSERT OR REPLACE INTO tool_calls (key, corpus, tool, args, output, structured, created_at, "
                "used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    call_key(outcome.tool, outcome.args, corpus),
                    corpus,
                    outcome.tool,
                    canonical_args(outcome.args),
                    outcome.output,
                    structured,
                    now,
                    now,
                ),
            )
            self._keep_within(db, now, self.limits.ttl_s, self.limits.max_entries, corpus=corpus)


def tool_cache_path(db_path: Path) -> Path:
    """Where the tool-call cache lives: beside the thread checkpoints (``threads.sqlite``)."""
    return db_path.parent / "tool_cache.sqlite"
