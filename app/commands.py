"""What the command modules share: one error guard for leaf commands, and command groups that
several modules add to (``aisearch eval …`` gets commands from ``index_cli`` and ``eval_cli``), and
the settings of a command that runs the graph."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Handler = Callable[[argparse.Namespace], int]


def run_settings(args: argparse.Namespace, *, preflight: bool = True) -> Any:
    """The settings of a command that runs the graph (``ask``, ``serve``, ``mcp``): the config file
    named by ``--config`` (or the default), then ``--db`` and ``--mcp-config`` when given.

    With ``preflight`` the thread store and the ``mcpServers`` file are checked here, so a bad one
    fails in one line before the command writes anything (``aisearch mcp`` goes without: a run
    that cannot open is its ``ask`` tool's error, and ``search`` still serves).

    Raises:
        ConfigError: A bad config file or thread store.
        ServerConfigError: A bad ``mcpServers`` file.
    """
    from core.settings import check_thread_store, load_settings
    from tools.registry import user_connections

    settings = load_settings(args.config)
    if args.db:
        settings.use_db(args.db)
    if args.mcp_config:
        settings.mcp_config = Path(args.mcp_config).expanduser()
    if preflight:
        check_thread_store(settings)
        if settings.mcp_config:
            user_connections(settings.mcp_config)
    return settings


def echo(text: str = "", *, err: bool = False) -> None:
    """Print a line of command output (stderr for errors)."""
    (sys.stderr if err else sys.stdout).write(text + "\n")


def guarded(
    handler: Handler,
    errors: tuple[type[BaseException], ...],
    *,
    code: int,
    prefix: str = "aisearch: error: ",
    describe: Callable[[BaseException], object] = lambda exc: exc,
) -> Handler:
    """``handler`` with the expected ``errors`` turned into one line on stderr and exit ``code``."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(handler(args) or 0)
        except errors as exc:
            echo(f"{prefix}{describe(exc)}", err=True)
            return code

    run.__doc__ = handler.__doc__
    return run


def command_group(subparsers: Any, name: str, help_text: str, dest: str) -> Any:
    """The sub-command group of ``aisearch <name>``, created by whichever module comes first."""
    parser = subparsers.choices.get(name) or subparsers.add_parser(name, help=help_text)
    for action in parser._actions:  # noqa: SLF001 - argparse offers no public accessor
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return action
    return parser.add_subparsers(dest=dest, required=True)
