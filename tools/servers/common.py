"""What every bundled MCP server shares: its command line (transport, loopback binding, log level)
and the tool annotations that say whether its calls may be cached."""

from __future__ import annotations

import argparse
import logging
from functools import partial

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations

LOOPBACK = ("127.0.0.1", "localhost", "::1")
# MCP tool annotations the tool-call cache reads (tools/cache/tool_calls.py): a read-only tool whose
# result depends only on its arguments and this machine's documents is closed-world and cached; one
# whose result can change while its arguments stay the same (the clock, the web, code that may read
# the clock or random numbers) is open-world and never cached
CLOSED_WORLD = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
OPEN_WORLD = ToolAnnotations(readOnlyHint=True, openWorldHint=True)
log = logging.getLogger(__name__)


def server_arg_parser(description: str, default_port: int) -> argparse.ArgumentParser:
    """An argument parser with ``--transport``, ``--host`` (loopback by default), ``--port``, ``--log-level``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default: loopback)")
    parser.add_argument("--port", type=int, default=default_port, help="HTTP port")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def serve(mcp: FastMCP, args: argparse.Namespace, *, idle_s: float = 0.0) -> None:
    """Run ``mcp`` as the parsed arguments say; a non-loopback host is allowed but logged.

    Over streamable HTTP with ``idle_s > 0`` the server exits after that many seconds without a
    request (``models/idle_http.py``).
    """
    mcp.settings.host, mcp.settings.port = args.host, args.port
    if args.host not in LOOPBACK:
        log.warning("serving on %s: the server is reachable from other machines", args.host)
        mcp.settings.transport_security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    if args.transport == "streamable-http" and idle_s > 0:
        from models.idle_http import serve_until_idle

        app = mcp.streamable_http_app()
        run = partial(serve_until_idle, app, host=args.host, port=args.port, idle_s=idle_s)
        anyio.run(partial(run, log_level=args.log_level))
        return
    mcp.run(transport=args.transport)
