"""The app each ``aisearch serve`` worker runs: the HTTP app with its settings read from the
environment, and a response header naming the worker that answered.

uvicorn's multi-process mode (``--workers N``) starts every worker as a fresh process that imports
the app by name (:data:`APP_FACTORY`), so nothing built in the command's own process reaches it:
the command puts its options in the environment (:func:`worker_environment`) and each worker reads
them back, as ``load_settings`` and ``GuardOptions.from_env`` already do.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http_api import create_app
from app.http_guard import MAX_BODY_ENV

APP_FACTORY = "app.serve_workers:served_app"
WORKER_HEADER = "x-aisearch-worker"
"""Every response of ``aisearch serve`` carries the answering worker's process id under this name."""


class WorkerHeader:
    """ASGI middleware: add :data:`WORKER_HEADER` (this process's id) to every HTTP response,
    the 409s and 404s included."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self.app = app
        self.pid = str(os.getpid())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; stamp the response's start."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append(WORKER_HEADER, self.pid)
            await send(message)

        await self.app(scope, receive, stamped)


def served_app() -> FastAPI:
    """The app of one worker (uvicorn calls this in each worker: ``factory=True``)."""
    app = create_app()
    app.add_middleware(WorkerHeader)
    return app


def worker_environment(
    *,
    config: str | None = None,
    db: str | None = None,
    mcp_config: str | None = None,
    max_body_bytes: int | None = None,
) -> dict[str, str]:
    """The environment that carries the command's options to every worker (only those given)."""
    env: dict[str, str] = {}
    if config:
        env["AISEARCH_CONFIG"] = str(Path(config).expanduser())
    if db:
        env["AISEARCH_DB"] = db  # a postgresql:// URL or a SQLite path, as load_settings reads it
    if mcp_config:
        env["AISEARCH_MCP_CONFIG"] = str(Path(mcp_config).expanduser())
    if max_body_bytes is not None:
        env[MAX_BODY_ENV] = str(max_body_bytes)
    return env
