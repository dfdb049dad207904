"""``aisearch mcp``: aisearch as an MCP server (``app/mcp_server.py``), over stdio or streamable HTTP.

``register(subparsers)`` adds the command to the main parser (``app/cli.py``).
"""

from __future__ import annotations

import argparse
import asyncio

from app.commands import guarded, run_settings
from models.config import ConfigError

DEFAULT_PORT = 8322


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the MCP tools ``ask`` and ``search`` until the client leaves or the process is stopped."""
    from app.mcp_server import serve  # the MCP server and the graph load only for this command

    settings = run_settings(args, preflight=False)
    asyncio.run(serve(settings, args.transport, args.host, args.port))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch mcp``."""
    mcp = subparsers.add_parser(
        "mcp",
        help="serve aisearch as an MCP server (tools: ask, search) over stdio or streamable HTTP",
        description="Serve aisearch to other agents (Claude Desktop, any MCP client): ask(query, thread_id?) "
        "answers with the short answer, the cited answer and its sources; search(query, k) returns passages "
        "of the local document index. Threads persist in the same store as `aisearch ask` and `aisearch serve`.",
    )
    mcp.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1: loopback)")
    mcp.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")
    mcp.add_argument(
        "--db",
        help="thread store: a SQLite file (default ~/.local/share/aisearch/threads.sqlite) or a postgresql:// URL",
    )
    mcp.add_argument("--mcp-config", help='an {"mcpServers": {...}} JSON file with extra MCP servers')
    mcp.set_defaults(func=guarded(cmd_mcp, (ConfigError, ValueError), code=2))
