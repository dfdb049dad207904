"""What the HTTP app checks before a run: the bearer token, the body's size, that the thread is not
already running and that this worker has room for one more run; and how long a run may take.

All three apply to the app's own routes only (a route class and dependencies, not middleware):
mounted into ``langgraph dev`` the app's middleware would wrap LangGraph Server's routes too.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.types import Message, Receive

API_KEY_ENV = "AISEARCH_API_KEY"
MAX_BODY_ENV = "AISEARCH_MAX_BODY_BYTES"
DEFAULT_MAX_BODY = 64 * 1024
"""64 KiB: a 2,000-character query with its config fits many times over."""


MAX_RUNS_ENV = "AISEARCH_MAX_RUNS"
DEFAULT_MAX_RUNS = 32
"""Runs in flight per server process (a full ``/batch`` fits); one more request gets 503 at once."""
RUN_TIMEOUT_ENV = "AISEARCH_RUN_TIMEOUT_S"
DEFAULT_RUN_TIMEOUT_S = 900.0
"""A run's deadline: past it the request gets 504 (a stream: an ``error`` event), the thread is free."""


def _positive(env: dict[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValueError(f"{name} must be a positive number, got {text!r}")
    return value


@dataclass(frozen=True)
class GuardOptions:
    """The app's limits: bearer token (None: no auth), the largest request body in bytes, runs in
    flight at once, and each run's deadline in seconds."""

    api_key: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_runs: int = DEFAULT_MAX_RUNS
    run_timeout_s: float = DEFAULT_RUN_TIMEOUT_S

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> GuardOptions:
        """``AISEARCH_API_KEY`` (unset or empty: auth off), ``AISEARCH_MAX_BODY_BYTES``,
        ``AISEARCH_MAX_RUNS`` and ``AISEARCH_RUN_TIMEOUT_S``.

        Raises:
            ValueError: A limit that is not a positive number.
        """
        env = dict(os.environ) if env is None else env
        return cls(
            api_key=env.get(API_KEY_ENV) or None,
            max_body_bytes=int(_positive(env, MAX_BODY_ENV, DEFAULT_MAX_BODY)),
            max_runs=int(_positive(env, MAX_RUNS_ENV, DEFAULT_MAX_RUNS)),
            run_timeout_s=_positive(env, RUN_TIMEOUT_ENV, DEFAULT_RUN_TIMEOUT_S),
        )


def _too_large(limit: int) -> str:
    return f"request body over the limit of {limit} bytes"


class LimitedBodyRoute(APIRoute):
    """A route that refuses a body over ``app.state.guard.max_body_bytes`` with 413, by its declared
    length before reading and by counting while reading (a chunked body has no length)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The route's handler behind the size check."""
        handler = super().get_route_handler()

        async def limited(request: Request) -> Response:
            limit = request.app.state.guard.max_body_bytes
            declared = request.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                return JSONResponse({"detail": _too_large(limit)}, status_code=413)
            return await handler(Request(request.scope, _counting(request.receive, limit)))

        return limited


def _counting(receive: Receive, limit: int) -> Receive:
    seen = 0

    async def counted() -> Message:
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > limit:  # an HTTPException passes FastAPI's body parsing unchanged
            raise HTTPException(413, _too_large(limit))
        return message

    return counted


async def require_key(request: Request) -> None:
    """Refuse a request without the configured bearer token (401); nothing when auth is off."""
    expected = request.app.state.guard.api_key
    if expected is None:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), expected.encode()):
        raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})


@dataclass
class ThreadClaims:
    """The threads with a run in progress: one run per thread at a time, a second one gets 409.

    This one holds them in this process (SQLite threads: one server process); with the threads in
    Postgres the server uses ``app.thread_locks.PostgresThreadClaims``, which holds them across
    processes."""

    busy: set[str] = field(default_factory=set)

    @contextmanager
    def claim(self, thread_id: str) -> Iterator[None]:
        """Hold ``thread_id`` for one run (409 when it is held already)."""
        self.take(thread_id)
        try:
            yield
        finally:
            self.release(thread_id)

    def take(self, thread_id: str) -> None:
        """Hold ``thread_id`` until :meth:`release` (409 when it is held already)."""
        if thread_id in self.busy:
            raise HTTPException(409, f"thread {thread_id!r} has a run in progress; retry when it ends")
        self.busy.add(thread_id)

    def release(self, thread_id: str) -> None:
        """Let the next run on ``thread_id`` start."""
        self.busy.discard(thread_id)

    def held(self, thread_id: str) -> bool:
        """Whether a run holds ``thread_id`` (here: in this process; see ``app/thread_locks.py``)."""
        return thread_id in self.busy


@dataclass
class RunSlots:
    """Runs in flight in this process, at most ``limit``: past it a request gets 503 at once (no
    queue: the model and tool tiers are the bottleneck, and a client can retry elsewhere)."""

    limit: int
    in_flight: int = 0

    def take(self, count: int = 1) -> None:
        """Hold ``count`` runs until :meth:`release` (503 with ``Retry-After`` when they do not fit)."""
        if self.in_flight + count > self.limit:
            raise HTTPException(
                503,
                f"{self.in_flight} of at most {self.limit} runs are in progress ({MAX_RUNS_ENV}); retry shortly",
                headers={"Retry-After": "5"},
            )
        self.in_flight += count

    def release(self, count: int = 1) -> None:
        """Give back ``count`` runs."""
        self.in_flight = max(0, self.in_flight - count)

    @contextmanager
    def hold(self, count: int = 1) -> Iterator[None]:
        """Hold ``count`` runs for a ``with`` block."""
        self.take(count)
        try:
            yield
        finally:
            self.release(count)
