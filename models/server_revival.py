"""An HTTP transport that brings the embedded local model server back when it has died.

The local server is a separate, long-lived process: the kernel's OOM killer, a user's ``kill``, its
own idle timeout (``local.idle_minutes``) or a crash can end it while a run, an evaluation or
``aisearch serve`` still holds chat models that point at its port. Their next request then fails with
"connection refused", or mid-request with "server disconnected".

:class:`RevivingTransport` sits under the OpenAI client of every local role. When a request fails
that way and the recorded server is really gone (its pid dead or its port closed), it starts a new
one through :func:`models.local_server.ensure_server_state` (one start even when many requests fail
at once: that function holds a file lock and reuses a healthy server), sends the request to the new
server's port, and returns its answer. The number of restarts per transport is bounded; past it, or
when the server cannot start, the original error goes up and the caller degrades as for any model
error (``models.errors``).

Neither transport keeps a connection open between requests (:data:`NO_KEEPALIVE`): llama-server's
router closes the connection after every reply it forwards from a model instance while its headers
announce keep-alive, so a pooled connection could be reused in the instant before that close
arrives, and the next request failed with "server disconnected without sending a response" (seen
under load). A new loopback connection per request costs well under a millisecond.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import httpx

from models.config import ModelSettings
from models.errors import LocalServerError
from models.local_server import ensure_server_state, read_state, server_alive

log = logging.getLogger(__name__)

MAX_RESTARTS = 3
"""Restarts one transport may do over its life: a server that keeps dying is not restarted forever."""

DEAD_SERVER_ERRORS: tuple[type[httpx.HTTPError], ...] = (
    httpx.ConnectError,
    httpx.RemoteProtocolError,
    httpx.ReadError,
)
"""What a request to a server that is gone (or went away mid-request) raises."""

NO_KEEPALIVE = httpx.Limits(max_keepalive_connections=0)
"""Connection limits for any client of the local model server: a fresh connection per request."""


def retarget(request: httpx.Request, state: dict[str, Any]) -> httpx.Request:
    """``request`` aimed at the host and port of the server recorded in ``state``."""
    host, port = str(state["host"]), int(state["port"])
    if request.url.host == host and request.url.port == port:
        return request
    request.url = request.url.copy_with(host=host, port=port)
    request.headers["Host"] = f"{host}:{port}"
    return request


class _Reviver:
    """The restart decision both transports share: restart only a dead server, a bounded number of times."""

    def __init__(self, settings: ModelSettings, max_restarts: int | None) -> None:
        self.settings = settings
        self.restarts_left = MAX_RESTARTS if max_restarts is None else max_restarts
        self._lock = threading.Lock()

    def revive(self, error: httpx.HTTPError) -> dict[str, Any] | None:
        """The state of a live server to resend to, or None to let ``error`` go up."""
        with self._lock:
            state = read_state()
            if state and server_alive(state):
                return state  # alive: restarted meanwhile by another request or process
            if self.restarts_left <= 0:
                log.error("the local model server is gone again (%s); not restarting it", error)
                return None
            self.restarts_left -= 1
            log.warning("the local model server is not running (%s); starting it again", error)
            try:
                state, _ = ensure_server_state(self.settings)
            except (LocalServerError, OSError, TimeoutError) as exc:
                log.error("the local model server could not be restarted: %s", exc)
                return None
            log.warning("the local model server is back on port %s", state["port"])
            return state


class RevivingTransport(httpx.BaseTransport):
    """A sync transport to the local server that restarts the server if it has died."""

    def __init__(self, settings: ModelSettings, *, max_restarts: int | None = None) -> None:
        """Send through a plain HTTP transport; restart the server at most ``max_restarts`` times
        (default :data:`MAX_RESTARTS`)."""
        self._inner = httpx.HTTPTransport(limits=NO_KEEPALIVE)
        self._reviver = _Reviver(settings, max_restarts)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; if the server is gone, restart it and send once more."""
        try:
            return self._inner.handle_request(request)
        except DEAD_SERVER_ERRORS as exc:
            state = self._reviver.revive(exc)
            if state is None:
                raise
            return self._inner.handle_request(retarget(request, state))

    def close(self) -> None:
        """Close the pooled connections."""
        self._inner.close()


class AsyncRevivingTransport(httpx.AsyncBaseTransport):
    """The async twin of :class:`RevivingTransport` (the restart runs in a worker thread)."""

    def __init__(self, settings: ModelSettings, *, max_restarts: int | None = None) -> None:
        """Send through a plain HTTP transport; restart the server at most ``max_restarts`` times
        (default :data:`MAX_RESTARTS`)."""
        self._inner = httpx.AsyncHTTPTransport(limits=NO_KEEPALIVE)
        self._reviver = _Reviver(settings, max_restarts)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; if the server is gone, restart it and send once more."""
        try:
            return await self._inner.handle_async_request(request)
        except DEAD_SERVER_ERRORS as exc:
            state = await asyncio.to_thread(self._reviver.revive, exc)
            if state is None:
                raise
            return await self._inner.handle_async_request(retarget(request, state))

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._inner.aclose()
