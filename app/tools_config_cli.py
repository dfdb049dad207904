"""``aisearch tools add|remove``: the user's MCP servers, kept in their ``mcpServers`` file.

The file is ``mcp_config`` when set (config or ``AISEARCH_MCP_CONFIG``), else
``~/.config/aisearch/mcp.json`` beside the config file, which every run reads once it exists.
``add`` starts the new server first and lists its tools, and writes nothing when it does not
start (``--no-check`` writes without starting it: a server that needs a secret not set yet).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from app.commands import Handler, command_group, echo, guarded
from tools.registry import ServerConfigError

CHECK_TIMEOUT_S = 60.0


def _guard(handler: Handler) -> Handler:
    return guarded(handler, (ServerConfigError, FileNotFoundError, ValueError), code=1)


def servers_file() -> Path:
    """The ``mcpServers`` file that ``add`` and ``remove`` edit."""
    from core.settings import load_settings, user_mcp_config

    return load_settings().mcp_config or user_mcp_config()


def _pairs(values: list[str] | None, option: str) -> dict[str, str]:
    pairs = {}
    for value in values or []:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise ValueError(f"{option} {value!r}: expected NAME=VALUE")
        pairs[key] = text
    return pairs


def entries_from_args(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The ``mcpServers`` entries the arguments describe: one server, or every server of ``--from``."""
    if args.from_file:
        from tools.mcp_file import read_servers

        _, servers = read_servers(Path(args.from_file).expanduser())
        if not servers:
            raise ValueError(f"{args.from_file} has no servers under mcpServers")
        return servers
    if not args.name:
        raise ValueError("name the server: aisearch tools add NAME -- COMMAND [ARGS…] (or --url URL)")
    if bool(args.url) == bool(args.command):
        raise ValueError("give either a command after '--' (stdio) or --url (HTTP): one of them")
    entry: dict[str, Any]
    if args.url:
        entry = {"url": args.url, "transport": args.transport}
        if args.header:
            entry["headers"] = _pairs(args.header, "--header")
    else:
        entry = {"command": args.command[0], "args": args.command[1:]}
        if args.env:
            entry["env"] = _pairs(args.env, "--env")
        if args.env_passthrough:
            entry["env_passthrough"] = list(args.env_passthrough)
    if args.description:
        entry["description"] = args.description
    return {args.name: entry}


async def check_servers(entries: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Start each server, list its tools, stop it; the tool names per server.

    Raises:
        ServerConfigError: When a server does not start or offers no tool.
    """
    from tools.catalog.listings import store_listing
    from tools.catalog.run_catalog import listed_tool
    from tools.hub import ToolHub
    from tools.registry import normalize_entry
    from tools.session import ServerLimits

    connections = {name: normalize_entry(name, entry) for name, entry in entries.items()}
    limits = ServerLimits(start_timeout_s=CHECK_TIMEOUT_S)
    async with ToolHub.open(connections, limits=limits) as hub:
        for name, error in hub.server_errors.items():
            raise ServerConfigError(f"server {name!r}: {error} (nothing was written)")
        for name, server in hub.servers.items():  # runs then start it only when a plan selects it
            listed = [listed_tool(t) for t in server.tools.values()]
            store_listing(name, connections[name], server.instructions, listed)
        tools = {
            name: sorted(
                spec.name.removeprefix(f"{name}.") for spec in hub.specs.values() if spec.server == name
            )
            for name in entries
        }
    for name, names in tools.items():
        if not names:
            raise ServerConfigError(f"server {name!r} started but offers no tools (nothing was written)")
    return tools


def _tools_line(names: list[str]) -> str:
    shown = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
    return f": {len(names)} tools ({shown})"


def cmd_add(args: argparse.Namespace) -> int:
    """Add MCP servers to the user's file, after starting them once (unless ``--no-check``)."""
    from tools.mcp_file import add_servers

    entries = entries_from_args(args)
    path = servers_file()
    tools = {} if args.no_check else asyncio.run(check_servers(entries))
    for name in add_servers(path, entries, replace=args.replace):
        echo(
            f"added {name!r} to {path}"
            + (_tools_line(tools[name]) if name in tools else " (not started: --no-check)")
        )
    echo("`aisearch tools index` embeds it for tool retrieval; every run from now on can use it.")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    """Remove a server from the user's file (a bundled server is disabled)."""
    from tools.mcp_file import remove_server

    echo(remove_server(servers_file(), args.name))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch tools add`` and ``aisearch tools remove``."""
    group = command_group(subparsers, "tools", "the MCP catalogue and its index", "tools_command")
    add = group.add_parser(
        "add",
        help="add an MCP server (stdio command or HTTP URL) to your mcp.json",
        description="aisearch tools add NAME -- COMMAND [ARGS…]  |  aisearch tools add NAME --url URL  |  "
        "aisearch tools add --from claude_desktop_config.json",
    )
    add.add_argument("name", nargs="?", help="the server's name (its tools become NAME.tool)")
    add.add_argument("--url", help="an HTTP server's URL instead of a command")
    add.add_argument("--transport", default="streamable_http", choices=["streamable_http", "sse"])
    add.add_argument("--header", action="append", help="NAME=VALUE sent to an HTTP server (repeatable)")
    add.add_argument("--env", action="append", help="NAME=VALUE for a stdio server (repeatable)")
    add.add_argument(
        "--env-passthrough", action="append", help="a variable of your environment it may see (repeatable)"
    )
    add.add_argument("--description", help="what the server is for (helps tool retrieval)")
    add.add_argument("--from", dest="from_file", help="add every server of an mcpServers JSON file")
    add.add_argument("--replace", action="store_true", help="overwrite a server of the same name")
    add.add_argument("--no-check", action="store_true", help="write it without starting it first")
    add.set_defaults(func=_guard(cmd_add), command=[], command_after_dashes=True)  # CMD after '--'

    remove = group.add_parser("remove", help="remove a server from your mcp.json (bundled ones are disabled)")
    remove.add_argument("name")
    remove.set_defaults(func=_guard(cmd_remove))
