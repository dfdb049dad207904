"""``aisearch serve``: the HTTP app (``app/http_api.py``) under uvicorn, on loopback by default;
``--workers N`` runs N worker processes on the one port (uvicorn's multi-process mode), which
needs the threads in Postgres (the one-run-per-thread guard then holds across them).

``register(subparsers)`` adds the command to the main parser (``app/cli.py``).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os

import uvicorn

from app.commands import guarded, run_settings
from models.config import ConfigError

log = logging.getLogger(__name__)

DEFAULT_PORT = 8321
WORKER_HEALTHCHECK_S = 30
"""How long uvicorn's supervisor waits for a worker to answer its ping (its default, 5 s, is short
for a worker that loads models and starts MCP servers on a busy machine)."""


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return host == ""


def served_hosts(bind: str, configured: str) -> str:
    """The ``AISEARCH_HTTP_HOSTS`` of the workers: the configured names plus the bound address
    (the loopback names for a loopback one); ``*`` (no check) for a wildcard bind with no names."""
    names = [name.strip() for name in configured.split(",") if name.strip()]
    if "*" in names:
        return "*"
    if _wildcard(bind):
        if not names:
            log.warning("serving on %s: Host is unchecked; set AISEARCH_HTTP_HOSTS to list names", bind)
        return ",".join(names) or "*"
    from app.http_guard import LOOPBACK_NAMES

    return ",".join([*names, *(LOOPBACK_NAMES if _loopback(bind) else [bind])])


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the HTTP API until interrupted: one worker process, or ``--workers`` of them.

    The options reach the workers through the environment (``app/serve_workers.py``); the settings
    are read here first, so a bad config file fails before any worker starts.
    """
    from app.http_guard import (  # FastAPI and the app load only for this command
        HOSTS_ENV,
        TOKEN_ENV,
        GuardOptions,
    )
    from app.serve_workers import APP_FACTORY, worker_environment

    if args.workers < 1:
        raise ValueError(f"--workers must be 1 or more, not {args.workers}")
    settings = run_settings(args)
    if args.workers > 1 and not settings.db_url:
        raise ConfigError(
            f"--workers {args.workers} needs the threads in Postgres (--db postgresql://… or AISEARCH_DB): "
            f"with SQLite ({settings.db_path}) one process serves a database"
        )
    guard = GuardOptions.from_env()  # a limit that is not a number fails here, in one line
    if not _loopback(args.host) and guard.token is None:
        log.warning("serving on %s without auth: set %s to require a bearer token", args.host, TOKEN_ENV)
    os.environ.update(
        worker_environment(
            config=args.config, db=args.db, mcp_config=args.mcp_config, max_body_bytes=args.max_body_bytes
        )
    )
    os.environ[HOSTS_ENV] = served_hosts(args.host, os.environ.get(HOSTS_ENV, ""))
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
    )
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch serve``."""
    serve = subparsers.add_parser(
        "serve",
        help="serve the search page and the LangServe-style HTTP API (/, /invoke, /stream, /docs …)",
        description="Serve the search page at / (/?q=QUERY runs a search) and the HTTP API: POST /invoke /batch /stream /stream_events, GET /input_schema "
        "/output_schema /config_schema /health, /conversations/{thread_id}/… ; OpenAPI docs at /docs. "
        "Threads persist in the SQLite checkpointer, or in Postgres for a postgresql:// URL (--db / "
        "AISEARCH_DB). AISEARCH_HTTP_TOKEN turns on bearer-token auth (every route but /health, the page, "
        "/docs, /redoc, /openapi.json); AISEARCH_HTTP_HOSTS lists the host names clients use besides the bound "
        "address (a request naming another gets 421); AISEARCH_MAX_BODY_BYTES bounds a request body "
        "(default 65536). --workers N serves from N processes on one port (threads in Postgres; see "
        "deploy/README.md).",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes on the one port (default 1); more than 1 needs the threads in Postgres",
    )
    serve.add_argument(
        "--db",
        help="thread store: a SQLite file (default ~/.local/share/aisearch/threads.sqlite) or a postgresql:// URL",
    )
    serve.add_argument("--mcp-config", help='an {"mcpServers": {...}} JSON file with extra MCP servers')
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        help="largest request body in bytes (default $AISEARCH_MAX_BODY_BYTES or 65536)",
    )
    serve.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    serve.set_defaults(func=guarded(cmd_serve, (ConfigError, ValueError), code=2))
