"""The semantic answer cache (seed 001 §6.3.2, MeanCache): earlier answers found by meaning.

An entry is a question, the earlier user turns of its conversation (its *context*), both embedded
by MiniLM, the answer as it was given (a JSON payload: route, assessment, answer, cited evidence),
how long the team took, and the document index's fingerprint at the time. :meth:`AnswerCache.lookup`
serves an entry when

- it was recorded over the same documents (same fingerprint; entries of any other are deleted:
  a re-index drops stale answers) and is younger than the time to live;
- its question is at least ``similarity`` similar to the new one (cosine), and so is its context,
  or neither has one (MeanCache's context chain: a follow-up "When was he born?" is the same
  question only after the same earlier turns);
- the near-miss guard (``tools/cache/near_miss.py``) finds no name, number or swapped word that
  tells the two apart, context included.

Entries live in SQLite beside the thread store (``answer_cache.sqlite``). Size is bounded: past
``max_entries`` the least recently used entries go, and expired ones go on every write.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tools.cache.near_miss import subject_mismatch
from tools.cache.sqlite_store import LOCK, SqliteStore
from tools.index.embedder import TextEmbedder

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    id INTEGER PRIMARY KEY,
    corpus TEXT NOT NULL,
    query TEXT NOT NULL,
    context TEXT NOT NULL,
    query_vector BLOB NOT NULL,
    context_vector BLOB,
    payload TEXT NOT NULL,
    seconds REAL NOT NULL,
    created_at REAL NOT NULL,
    used_at REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS answers_corpus ON answers (corpus);
"""
MAX_REFUSALS = 3  # near misses remembered per lookup, for logs and the benchmark


@dataclass(frozen=True)
class CacheLimits:
    """When an entry may be served and how many are kept."""

    similarity: float = 0.9
    ttl_s: float = 7 * 24 * 3600.0
    max_entries: int = 1000


@dataclass(frozen=True)
class AnswerHit:
    """An earlier answer served for a new question."""

    query: str
    similarity: float
    payload: dict[str, Any]
    seconds: float  # how long the team took to answer it
    age_s: float


@dataclass
class Lookup:
    """What a lookup found: the hit, or None, and the near misses the guard refused."""

    hit: AnswerHit | None
    refused: list[tuple[str, float, str]]  # (cached question, similarity, why)


def context_text(context: Sequence[str]) -> str:
    """The earlier user turns as one text (oldest first)."""
    return "\n".join(turn.strip() for turn in context if turn.strip())


class AnswerCache(SqliteStore):
    """Earlier answers in SQLite, found by the meaning of the question and its context."""

    table = "answers"
    key = "id"

    def __init__(
        self,
        path: Path,
        embedder: TextEmbedder,
        limits: CacheLimits | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Open (creating when missing) the cache at ``path``; ``embedder`` embeds questions."""
        super().__init__(path, SCHEMA, clock)
        self.embedder = embedder
        self.limits = limits or CacheLimits()

    def embed(self, query: str, context: str) -> tuple[np.ndarray, np.ndarray | None]:
        """The question's vector and its context's (None without a context)."""
        texts = [query, context] if context else [query]
        vectors = np.asarray(self.embedder.encode(texts), dtype=np.float32)
        return vectors[0], vectors[1] if context else None

    def lookup(self, query: str, context: Sequence[str], corpus: str) -> Lookup:
        """The best earlier answer that may be served for ``query`` after ``context`` over the
        documents ``corpus`` (see the module docstring), and the near misses refused."""
        now = self.clock()
        earlier = context_text(context)
        with LOCK, self._connect() as db, db:
            db.execute(
                "DELETE FROM answers WHERE corpus != ? OR created_at < ?", (corpus, now - self.limits.ttl_s)
            )
            rows = db.execute(
                "SELECT id, query, context, query_vector, context_vector, payload, seconds, created_at "
                "FROM answers WHERE corpus = ?",
                (corpus,),
            ).fetchall()
        if not rows:
            return Lookup(None, [])
        vector, context_vector = self.embed(query, earlier)
        matrix = np.stack([np.frombuffer(row[3], dtype=np.float32) for row in rows])
        similarities = matrix @ vector
        refused: list[tuple[str, float, str]] = []
        for index in np.argsort(-similarities):
            similarity = float(similarities[index])
            if similarity < self.limits.similarity:
                break
            entry_id, cached, cached_context, _, cached_vector, payload, seconds, created = rows[index]
            why = self._context_mismatch(earlier, context_vector, cached_context, cached_vector)
            why = why or subject_mismatch(f"{cached_context}\n{cached}", f"{earlier}\n{query}")
            if why:
                if len(refused) < MAX_REFUSALS:
                    refused.append((cached, round(similarity, 4), why))
                continue
            with LOCK, self._connect() as db, db:
                db.execute("UPDATE answers SET used_at = ?, hits = hits + 1 WHERE id = ?", (now, entry_id))
            hit = AnswerHit(
                cached, round(similarity, 4), json.loads(payload), seconds, round(now - created, 1)
            )
            return Lookup(hit, refused)
        return Lookup(None, refused)

    def _context_mismatch(
        self, context: str, vector: np.ndarray | None, cached: str, cached_vector: bytes | None
    ) -> str | None:
        """Why the two contexts differ (one has none, or they are not similar enough), or None."""
        if not context and not cached:
            return None
        if vector is None or cached_vector is None:
            return "one question has a conversation before it, the other none"
        similarity = float(np.frombuffer(cached_vector, dtype=np.float32) @ vector)
        if similarity < self.limits.similarity:
            return f"the conversations differ (similarity {similarity:.2f})"
        return None

    def store(
        self, query: str, context: Sequence[str], corpus: str, payload: dict[str, Any], seconds: float
    ) -> None:
        """Record the answer to ``query`` after ``context`` (replacing the same question's earlier
        entry), then drop expired entries and the least recently used beyond ``max_entries``."""
        now = self.clock()
        earlier = context_text(context)
        vector, context_vector = self.embed(query, earlier)
        blob = context_vector.astype(np.float32).tobytes() if context_vector is not None else None
        with LOCK, self._connect() as db, db:
            db.execute(
                "DELETE FROM answers WHERE corpus = ? AND query = ? AND context = ?", (corpus, query, earlier)
            )
            db.execute(
                "INSERT INTO answers (corpus, query, context, query_vector, context_vector, payload, seconds, "
                "created_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    corpus,
                    query,
                    earlier,
                    vector.astype(np.float32).tobytes(),
                    blob,
                    json.dumps(payload, ensure_ascii=False, default=str),
                    seconds,
                    now,
                    now,
                ),
            )
            self._keep_within(db, now, self.limits.ttl_s, self.limits.max_entries)


def answer_cache_path(db_path: Path) -> Path:
    """Where the answer cache lives: beside the thread checkpoints (``threads.sqlite``)."""
    return db_path.parent / "answer_cache.sqlite"
