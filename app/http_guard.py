"""What the HTTP app checks before a run: the bearer token, the body's size, and that the thread
is not already running.

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


@dataclass(frozen=True)
class GuardOptions:
    """The app's limits: bearer token (None: no auth) and the largest request body in bytes."""

    api_key: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> GuardOptions:
        """``AISEARCH_API_KEY`` (unset or empty: auth off) and ``AISEARCH_MAX_BODY_BYTES``."""
        env = dict(os.environ) if env is None else env
        limit = env.get(MAX_BODY_ENV, "").strip()
        return cls(
            api_key=env.get(API_KEY_ENV) or None, max_body_bytes=int(limit) if limit else DEFAULT_MAX_BODY
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
