"""The long-lived document server from the CLI's side: ``aisearch docs start|status|stop``, and
:func:`use_docs_server`, which points an ``ask`` run's docsearch at it (``tools/docs_server.py``).

``register(subparsers)`` adds the commands to the main parser (``app/cli.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import threading
import time
from typing import Any

from rich.console import Console

from app.commands import Handler, echo, guarded
from core.settings import Settings, load_settings
from models.config import ConfigError
from tools.docs_server import (
    DocsServerError,
    docs_server_status,
    ensure_docs_server,
    mcp_connection,
    stop_docs_server,
)
from tools.registry import DOCSEARCH_MODULE

log = logging.getLogger(__name__)

STARTING = "starting the document server…"


def _skip_reason(connections: dict[str, dict[str, Any]], settings: Settings) -> str | None:
    """Why this run keeps docsearch as a one-off stdio server, or None to use the long-lived one."""
    from tools.index.service import default_build_needed
    from tools.index.store import IndexStore

    entry = connections.get("docsearch")
    if not entry:
        return "no docsearch in this run"
    if entry.get("args") != ["-m", DOCSEARCH_MODULE]:
        return "docsearch is configured by the user"
    if not settings.docs_server.enabled:
        return "docs_server.enabled is off"
    if settings.docsearch.rerank:
        return "the LLM rerank needs this run's model credentials"
    if default_build_needed(IndexStore()):
        return "the default collection is missing (the one-off server builds it)"
    return None


async def use_docs_server(
    connections: dict[str, dict[str, Any]], settings: Settings, console: Console
) -> bool:
    """Point the bundled docsearch connection at the long-lived document server, starting it if needed.

    Returns:
        True when ``connections["docsearch"]`` now points at it. When it cannot start, a warning is
        printed on ``console`` and the run keeps the one-off stdio server; a Ctrl-C while it starts
        stops the new server again.
    """
    reason = _skip_reason(connections, settings)
    if reason:
        log.info("docsearch runs over stdio for this run: %s", reason)
        return False
    cancel = threading.Event()
    idle_s = settings.docs_server.idle_minutes * 60
    try:
        with console.status(STARTING):
            state, started = await asyncio.to_thread(ensure_docs_server, idle_s=idle_s, cancel=cancel)
    except asyncio.CancelledError:
        cancel.set()
        raise
    except (DocsServerError, OSError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        console.print(
            f"[yellow]document server unavailable[/] ({first_line}); docsearch starts for this run only",
            highlight=False,
        )
        log.warning("document server unavailable: %s", exc)
        return False
    how = "started now" if started else "reused"
    log.info("docsearch from the document server %s (pid %s, %s)", state["url"], state["pid"], how)
    connections["docsearch"] = mcp_connection(state)
    return True


def _guard(handler: Handler) -> Handler:
    """Turn the expected errors into a one-line message on stderr and exit code 1."""
    return guarded(handler, (DocsServerError, ConfigError, OSError), code=1, prefix="error: ")


def cmd_docs_start(args: argparse.Namespace) -> int:
    """Start the document server (or find the running one) and print its URL."""
    minutes = args.idle_minutes or load_settings(getattr(args, "config", None)).docs_server.idle_minutes
    started_at = time.monotonic()
    state, started = ensure_docs_server(idle_s=minutes * 60)
    elapsed = time.monotonic() - started_at
    if args.json:
        echo(json.dumps({**state, "started_now": started, "seconds": round(elapsed, 2)}, indent=2))
        return 0
    verb = f"started in {elapsed:.1f} s" if started else "already running"
    echo(f"document server {verb}: {state['url']} (pid {state['pid']})")
    echo(f"  index: {state['index_dir']}")
    echo(f"  exits after {state['idle_s'] / 60:g} min without a request; log: {state['log']}")
    return 0


def cmd_docs_status(args: argparse.Namespace) -> int:
    """Print whether the document server of the index runs; exit 3 if it does not."""
    info = docs_server_status()
    if args.json:
        echo(json.dumps(info, indent=2))
    elif info["running"]:
        current = "" if info.get("current") else " (older code or index: the next run replaces it)"
        echo(f"document server: running{current}: {info['url']} (pid {info['pid']}, up {info['uptime_s']} s)")
        echo(f"  index: {info['index_dir']}")
        echo(f"  exits after {info['idle_s'] / 60:g} min without a request; log: {info['log']}")
    else:
        echo(f"document server: not running for {info['index_dir']} (`aisearch ask` starts it on first use)")
    return 0 if info["running"] else 3


def cmd_docs_stop(args: argparse.Namespace) -> int:
    """Stop the document server of the index if it runs."""
    echo("document server stopped" if stop_docs_server() else "document server was not running")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``docs start|status|stop`` to the main CLI's subparsers."""
    docs = subparsers.add_parser("docs", help="the long-lived document server (docsearch over HTTP)")
    docs_sub = docs.add_subparsers(dest="docs_command", metavar="{start,status,stop}")
    docs_sub.required = True

    start = docs_sub.add_parser("start", help="start the document server (reuses a running one)")
    start.add_argument("--json", action="store_true", help="print the server state as JSON")
    start.add_argument(
        "--idle-minutes", type=float, help="exit after this long without a request (default: config, 30)"
    )
    start.set_defaults(func=_guard(cmd_docs_start))

    stat = docs_sub.add_parser("status", help="show the document server (exit 3 if it is not running)")
    stat.add_argument("--json", action="store_true", help="print JSON")
    stat.set_defaults(func=_guard(cmd_docs_status))

    stop = docs_sub.add_parser("stop", help="stop the document server")
    stop.set_defaults(func=_guard(cmd_docs_stop))
