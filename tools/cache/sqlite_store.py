"""What the answer cache and the tool-call cache share: a SQLite file opened with its schema, and
entries kept within a time to live and a count, the least recently used going first."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import ClassVar

LOCK = threading.Lock()
"""Writers in one process take turns (SQLite itself serialises writers across processes)."""


class SqliteStore:
    """One cache's SQLite file: ``table`` with a ``key`` column, ``created_at`` and ``used_at``."""

    table: ClassVar[str]
    key: ClassVar[str]

    def __init__(self, path: Path, schema: str, clock: Callable[[], float] = time.time) -> None:
        """Open (creating when missing) the file at ``path`` with ``schema``."""
        self.path = path
        self.clock = clock
        path.parent.mkdir(parents=True, exist_ok=True)
        with LOCK, closing(sqlite3.connect(path, timeout=10)) as db, db:
            db.executescript(schema)

    def _connect(self) -> closing[sqlite3.Connection]:
        return closing(sqlite3.connect(self.path, timeout=10))

    # the table and column names in the SQL below are class constants, never input
    def _keep_within(
        self, db: sqlite3.Connection, now: float, ttl_s: float, max_entries: int, *, corpus: str | None = None
    ) -> None:
        """Drop the entries older than ``ttl_s`` (and, given ``corpus``, those of any other corpus),
        then the least recently used beyond ``max_entries``."""
        other_corpus = "corpus != ? OR " if corpus is not None else ""
        stale_args = (corpus, now - ttl_s) if corpus is not None else (now - ttl_s,)
        db.execute(f"DELETE FROM {self.table} WHERE {other_corpus}created_at < ?", stale_args)
        db.execute(
            f"DELETE FROM {self.table} WHERE {self.key} NOT IN "
            f"(SELECT {self.key} FROM {self.table} ORDER BY used_at DESC, {self.key} DESC LIMIT ?)",
            (max_entries,),
        )

    def size(self) -> int:
        """Entries held now."""
        with LOCK, self._connect() as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])
