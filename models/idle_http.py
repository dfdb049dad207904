"""Serve an HTTP app until it has been idle for a while, then exit.

A long-lived server that nobody stops (the local model server and the document server, which the
CLI starts and reuses) must not hold its memory forever: it exits after ``idle_s`` seconds with no request in flight. A request in
flight counts as activity for as long as it lasts, so a client that holds an MCP session open (its
event stream is one long GET) keeps the server alive, however long it waits between tool calls.

``POST /retire`` shortens the wait to :data:`RETIRE_S`: a server that a newer one replaces finishes
the runs that still use it, then exits.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio

log = logging.getLogger(__name__)

Scope = dict[str, Any]
ASGIApp = Any
RETIRE_PATH = "/retire"
RETIRE_S = 2.0


class ActivityTracker:
    """ASGI middleware that counts HTTP requests in flight and remembers when the last one ended."""

    def __init__(self, app: ASGIApp, idle_s: float) -> None:
        """Wrap ``app``; the server counts as active from now and may idle ``idle_s`` seconds."""
        self.app = app
        self.idle_s = idle_s
        self.in_flight = 0
        self.last_active = time.monotonic()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Pass the request on, counting it while it runs (lifespan events are not requests)."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] == RETIRE_PATH and scope["method"] == "POST":
            self.idle_s = min(self.idle_s, RETIRE_S)
            log.warning("retired: exiting once no request has been in flight for %.0f s", self.idle_s)
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.last_active = time.monotonic()

    def expired(self) -> bool:
        """Whether no request has been in flight for ``idle_s`` seconds."""
        return not self.in_flight and time.monotonic() - self.last_active >= self.idle_s


async def serve_until_idle(
    app: ASGIApp, *, host: str, port: int, idle_s: float, log_level: str = "warning"
) -> None:
    """Run ``app`` with uvicorn on ``host:port`` until SIGTERM/SIGINT or ``idle_s`` seconds without requests."""
    import uvicorn

    tracker = ActivityTracker(app, idle_s)
    config = uvicorn.Config(
        tracker, host=host, port=port, log_level=log_level.lower(), timeout_graceful_shutdown=3
    )
    server = uvicorn.Server(config)

    async def watch() -> None:
        while not server.should_exit:
            await anyio.sleep(min(max(tracker.idle_s / 4, 0.1), 5.0))
            if tracker.expired():
                log.warning("no request for %.0f s: exiting", tracker.idle_s)
                server.should_exit = True

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        await server.serve()
        group.cancel_scope.cancel()
