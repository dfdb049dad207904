"""What the HTTP app checks before a run: the ``Host`` header, the bearer token, the body's size,
that the thread is not already running and that this worker has room for one more run; and how
long a run may take.

The bearer token is ``AISEARCH_HTTP_TOKEN``, never a model key: a key in ``AISEARCH_API_KEY`` is
sent to the model endpoints, and a token the API accepts must not be. ``Host`` must name the
server (DNS rebinding: a web page the user visits may resolve its own name to 127.0.0.1 and drive
an API without a token); ``AISEARCH_HTTP_HOSTS`` lists the names it may be reached by (default the
loopback names; ``*``: any), and ``aisearch serve`` adds the address it binds.

The checks apply to the app's own routes only (a route class and dependencies, not middleware):
mounted into ``langgraph dev`` the app's middleware would wrap LangGraph Server's routes too.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.types import Message, Receive

from core.settings_groups import HttpSettings
from models.env_settings import env_names, environment, load_group

log = logging.getLogger(__name__)

TOKEN_ENV, HOSTS_ENV, MAX_BODY_ENV, MAX_RUNS_ENV, RUN_TIMEOUT_ENV = (
    env_names(HttpSettings, name)[0]
    for name in ("token", "hosts", "max_body_bytes", "max_runs", "run_timeout_s")
)
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
DEFAULTS = HttpSettings()
DEFAULT_MAX_BODY = DEFAULTS.max_body_bytes
DEFAULT_MAX_RUNS = DEFAULTS.max_runs
DEFAULT_RUN_TIMEOUT_S = DEFAULTS.run_timeout_s


def _host_names(text: str) -> frozenset[str] | None:
    """The host names of a comma-separated list (default: the loopback names); None for ``*`` (any)."""
    names = {name.strip().lower().strip("[]") for name in text.split(",") if name.strip()}
    if "*" in names:
        return None
    return frozenset(names or LOOPBACK_NAMES)


def _model_key_reused(token: str, env: Mapping[str, str]) -> str | None:
    """The name of a model key variable that holds ``token`` too, if any."""
    for name, value in env.items():
        is_key = name.startswith("AISEARCH_") and name.endswith("_API_KEY")
        if is_key and hmac.compare_digest(value.encode(), token.encode()):
            return name
    return None


@dataclass(frozen=True)
class GuardOptions:
    """The app's limits: bearer token (None: no auth), the host names a request may use (None:
    any), the largest request body in bytes, runs in flight at once, and each run's deadline in seconds."""

    token: str | None = None
    hosts: frozenset[str] | None = frozenset(LOOPBACK_NAMES)
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_runs: int = DEFAULT_MAX_RUNS
    run_timeout_s: float = DEFAULT_RUN_TIMEOUT_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GuardOptions:
        """The ``http`` settings of the environment (``AISEARCH_HTTP_TOKEN``, unset or empty: auth
        off); a warning when the token is also a model key.

        Raises:
            ConfigError: A limit that is not a positive number, naming its variable.
        """
        env = environment(env)
        http = load_group(HttpSettings, env, key="http")
        token = http.token.get_secret_value() if http.token else None
        reused = _model_key_reused(token, env) if token else None
        if reused:
            log.warning("%s equals %s: a model provider receives the API token", TOKEN_ENV, reused)
        return cls(
            token=token,
            hosts=_host_names(http.hosts),
            max_body_bytes=http.max_body_bytes,
            max_runs=http.max_runs,
            run_timeout_s=http.run_timeout_s,
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


async def require_host(request: Request) -> None:
    """Refuse a request whose ``Host`` is not one of the server's names (421)."""
    allowed = request.app.state.guard.hosts
    if allowed is None:
        return
    host = request.headers.get("host", "")
    if (urlsplit(f"//{host}").hostname or "") not in allowed:
        raise HTTPException(421, f"Host {host!r} is not a name of this server (set {HOSTS_ENV})")


async def require_key(request: Request) -> None:
    """Refuse a request without the configured bearer token (401); nothing when auth is off."""
    expected = request.app.state.guard.token
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


def guarded_router() -> APIRouter:
    """A router for the app's own routes: each checks ``Host`` and the bearer token, and limits the body."""
    return APIRouter(route_class=LimitedBodyRoute, dependencies=[Depends(require_host), Depends(require_key)])
