"""Serve an MCP server's HTTP app until it has been idle for a while, then exit.

A long-lived server that nobody stops (the document server the CLI starts and reuses) must not
hold its memory forever: it exits after ``idle_s`` seconds with no request in flight. A request in
flight counts as activity for as long as it lasts, so a client that holds an MCP session open (its
event stream is one long GET) keeps the server alive, however long it waits between tool calls.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import uvicorn

log = logging.getLogger(__name__)

Scope = dict[str, Any]
ASGIApp = Any


class ActivityTracker:
    """ASGI middleware that counts HTTP requests in flight and remembers when the last one ended."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``; the server counts as active from now."""
        self.app = app
        self.in_flight = 0
        self.last_active = time.monotonic()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Pass the request on, counting it while it runs (lifespan events are not requests)."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.last_active = time.monotonic()

    def idle_seconds(self) -> float:
        """Seconds since the last request ended (0 while one is in flight)."""
        return 0.0 if self.in_flight else time.monotonic() - self.last_active


async def serve_until_idle(
    app: ASGIApp, *, host: str, port: int, idle_s: float, log_level: str = "warning"
) -> None:
    """Run ``app`` with uvicorn on ``host:port`` until SIGTERM/SIGINT or ``idle_s`` seconds without requests."""
    tracker = ActivityTracker(app)
    config = uvicorn.Config(
        tracker, host=host, port=port, log_level=log_level.lower(), timeout_graceful_shutdown=3
    )
    server = uvicorn.Server(config)

    async def watch() -> None:
        while not server.should_exit:
            await anyio.sleep(min(max(idle_s / 4, 0.1), 5.0))
            if tracker.idle_seconds() >= idle_s:
                log.warning("no request for %.0f s: exiting", idle_s)
                server.should_exit = True

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        await server.serve()
        group.cancel_scope.cancel()
