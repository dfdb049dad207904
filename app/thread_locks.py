"""One run per thread across processes: the HTTP app's thread claims held as Postgres advisory locks.

:class:`~app.http_guard.ThreadClaims` knows the threads its own process runs. With the threads in
Postgres, several ``aisearch serve`` workers (or machines) share them, so a claim is also a
session-level advisory lock (``pg_try_advisory_lock``) on a connection each process keeps for its
claims: the second run on a thread gets 409 whichever worker it reaches, and a worker that dies
drops its connection, which releases its locks.

The checks are short blocking calls on that one connection (a loopback round trip is well under a
millisecond), made from the event loop because the claims' interface is synchronous: the 409 must
come before a streamed response starts. A connection that broke is opened again (within 5 s, else
the request gets 503) and this process's claims are locked again on it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import HTTPException

from app.http_guard import ThreadClaims
from core.settings import Settings
from models.config import ConfigError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5
_HELD = """
SELECT EXISTS (
    SELECT 1 FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND objsubid = 1
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND classid = %s::bigint::oid AND objid = %s::bigint::oid
)
"""


def lock_key(thread_id: str) -> int:
    """The advisory lock key of ``thread_id``: a signed 64-bit hash, the same in every process."""
    digest = hashlib.blake2b(thread_id.encode(), digest_size=8, person=b"aisearch.thread").digest()
    return int.from_bytes(digest, "big", signed=True)


def _halves(key: int) -> tuple[int, int]:
    """``(classid, objid)``: how ``pg_locks`` shows a bigint advisory key (high half, low half)."""
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return unsigned >> 32, unsigned & 0xFFFF_FFFF


@dataclass
class PostgresThreadClaims(ThreadClaims):
    """Thread claims that hold across processes: each is also an advisory lock in Postgres.

    ``busy`` stays this process's own claims (``/health`` counts them); :meth:`held` sees every
    process's.
    """

    url: str = field(default="", repr=False)  # may hold a password
    _connection: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def connect(self) -> None:
        """Open the claims' connection (autocommit: a session lock needs no transaction)."""
        import psycopg

        self._connection = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)

    def close(self) -> None:
        """Close the connection: Postgres releases every lock it holds."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _query(self, sql: str, params: tuple[Any, ...]) -> Any:
        """One value from ``sql``; a connection that broke is opened again once, and the claims this
        process holds are taken again on it (their locks went with the old session)."""
        import psycopg

        with self._lock:
            try:
                return self._connection.execute(sql, params).fetchone()[0]
            except psycopg.OperationalError as exc:
                log.warning("the thread-claims connection to Postgres broke (%s); reconnecting", exc)
            try:
                self.close()
                self.connect()
                for thread_id in self.busy:
                    self._connection.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(thread_id),))
                return self._connection.execute(sql, params).fetchone()[0]
            except psycopg.OperationalError as exc:
                raise HTTPException(503, f"the thread store is unavailable ({exc})") from None

    def take(self, thread_id: str) -> None:
        """Hold ``thread_id`` in this process and in Postgres (409 when any process holds it)."""
        if thread_id in self.busy or not self._query(
            "SELECT pg_try_advisory_lock(%s)", (lock_key(thread_id),)
        ):
            raise HTTPException(409, f"thread {thread_id!r} has a run in progress; retry when it ends")
        self.busy.add(thread_id)

    def release(self, thread_id: str) -> None:
        """Let the next run on ``thread_id`` start, here or in another process."""
        if thread_id not in self.busy:
            return
        self.busy.discard(thread_id)
        try:
            unlocked = self._query("SELECT pg_advisory_unlock(%s)", (lock_key(thread_id),))
        except HTTPException:  # Postgres is unreachable: the session, and the lock with it, is gone
            log.warning("could not unlock thread %s: Postgres is unreachable", thread_id)
            return
        if not unlocked:
            log.warning("thread %s was not locked in Postgres when its run ended", thread_id)

    def held(self, thread_id: str) -> bool:
        """Whether a run holds ``thread_id`` in any process sharing this Postgres."""
        return thread_id in self.busy or bool(self._query(_HELD, _halves(lock_key(thread_id))))


@asynccontextmanager
async def open_claims(settings: Settings) -> AsyncIterator[ThreadClaims]:
    """The thread claims of a server: advisory locks in Postgres when the threads are there, else
    this process's own set (SQLite: one server process per database file).

    Raises:
        ConfigError: Postgres threads without ``psycopg`` installed.
    """
    if not settings.db_url:
        yield ThreadClaims()
        return
    try:
        import psycopg  # noqa: F401 - only to say what is missing
    except ImportError:
        raise ConfigError("threads in Postgres need psycopg: pip install 'aisearch[postgres]'") from None
    claims = PostgresThreadClaims(url=settings.db_url)
    claims.connect()
    try:
        yield claims
    finally:
        claims.close()
