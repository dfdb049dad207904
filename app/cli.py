"""The ``aisearch`` command line: ``ask`` a question (streamed as it happens), manage models, show config.

Argument parsing and the run's setup live here; how a run is shown is ``app/render.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import threading
import time
from typing import Any

from langgraph.types import Command
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from app.bench_cli import register as register_bench
from app.bfcl_cli import register as register_bfcl
from app.commands import run_settings
from app.distill_cli import register as register_distill
from app.docs_cli import register as register_docs
from app.docs_cli import use_docs_server
from app.eval_cli import register as register_eval
from app.executor_cli import register as register_executor
from app.human_cli import ask_in_thread, can_ask
from app.index_cli import register as register_index
from app.mcp_cli import register as register_mcp
from app.models_cli import register as register_models
from app.render import ProgressPrinter, print_answer
from app.run_setup import (
    EndpointUnreachable,
    Token,
    check_endpoints,
    new_thread_id,
    open_checkpointer,
    pending_requests,
    run_stream,
    store_label,
    thread_config,
    thread_exists,
)
from app.serve_cli import register as register_serve
from app.tools_cli import register as register_tools
from app.tools_config_cli import register as register_tools_config
from core.query import QueryError, prepare_query
from core.run import RunContext, open_run
from core.state import Answer
from graph.builder import build_graph
from models.config import ROLES, ConfigError
from models.errors import LocalServerError
from models.factory import ModelUnavailableError
from models.local_server import require_program
from models.model_parts import AssemblyError
from tools.index.first_run import default_build_enabled, ensure_default_collection
from tools.index.service import default_build_needed
from tools.index.store import IndexStore
from tools.registry import DOCSEARCH_MODULE, ServerConfigError, load_connections

log = logging.getLogger("aisearch")


FIRST_RUN_NOTE = (
    "indexing the Python standard library docs once so questions about it can be answered (~1-3 min); "
    "your own docs: aisearch index ./my-docs"
)


class UserError(RuntimeError):
    """A problem the user can fix; printed without a traceback."""


class _BuildStopped(Exception):
    """Raised from the progress callback to stop the default-index build (Ctrl-C)."""


async def first_run_index(console: Console, store: IndexStore | None = None) -> bool:
    """Index the Python standard library docs (the default collection) if they are missing, with a
    progress bar on ``console``; the build runs in a thread. Does nothing when they exist.

    Returns:
        False when the build failed (warned on ``console`` with the reason): the run then goes on
        without docsearch. Ctrl-C stops the build at its next step; the next ``ask`` resumes it.
    """
    store = store or IndexStore()
    if not default_build_needed(store):
        return True
    console.print(FIRST_RUN_NOTE, highlight=False)
    stop = threading.Event()
    started = time.monotonic()
    failure = ""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(
        *columns, TextColumn("passages"), TimeElapsedColumn(), console=console, transient=True
    ) as bar:
        task = bar.add_task("reading the docs, loading the embedding model", total=None)

        def progress(done: int, total: int) -> None:
            if stop.is_set():
                raise _BuildStopped("interrupted")
            bar.update(task, description="embedding", completed=done, total=total)

        try:
            report = await asyncio.to_thread(ensure_default_collection, store, on_progress=progress)
        except asyncio.CancelledError:
            stop.set()
            raise
        except Exception as exc:  # noqa: BLE001 - any failure: warn and answer without docsearch
            failure, report = f"{type(exc).__name__}: {exc}", None
    if failure:
        console.print(
            f"[yellow]warning:[/] indexing the standard library docs failed ({failure}); answering without "
            "docsearch. Retry with `aisearch index --default`; skip it with --no-default-index "
            "or AISEARCH_DOCSEARCH_DEFAULT_BUILD=0",
            highlight=False,
        )
        return False
    if report is None:
        console.print("[dim]another aisearch process indexed them meanwhile[/]")
    else:
        console.print(
            f"indexed {report.passages_total} passages of the standard library docs "
            f"in {time.monotonic() - started:.0f} s",
            highlight=False,
        )
    return True


async def ask(args: argparse.Namespace) -> int:
    """Run one question through the graph on a (new or continued) thread."""
    try:
        prepared = prepare_query(args.question)
    except QueryError as exc:
        raise UserError(f'{exc}, e.g. aisearch ask "Who designed the Eiffel Tower?"') from None
    settings = run_settings(args)
    check_endpoints(settings)
    if any(settings.role(role).is_local for role in ROLES):
        require_program(settings)  # a missing server program stops the run before an index is built
    settings.bypass_cache = args.no_cache
    console = Console(stderr=args.json)
    if args.interactive or args.review_plan:
        if can_ask(sys.stdin):
            settings.clarify, settings.review_plan = args.interactive, args.review_plan
        else:
            console.print("[yellow]stdin is not a terminal: nothing is asked on this run[/]")
    if prepared.trim_note:
        console.print(
            f"[yellow]The query is long: only its first {len(prepared.text):,} characters are read.[/]"
        )
    printer = ProgressPrinter(console)
    thread_id = args.thread or new_thread_id()
    config = thread_config(thread_id)
    async with open_checkpointer(settings) as saver:
        graph = build_graph(checkpointer=saver)
        if args.thread and not await thread_exists(graph, thread_id):
            raise UserError(
                f"unknown thread id {args.thread!r} (in {store_label(settings)}); omit --thread to start one"
            )
        indexed = True
        if not args.no_default_index and default_build_enabled():
            indexed = await first_run_index(Console(stderr=True))
        connections = load_connections(settings.mcp_config, settings.websearch)
        if not indexed and connections.get("docsearch", {}).get("args") == ["-m", DOCSEARCH_MODULE]:
            del connections["docsearch"]  # the bundled one would only serve the half-built index
        await use_docs_server(connections, settings, console)
        async with open_run(settings, connections=connections, status=console.status, cache=True) as run:
            for server, error in run.tools.server_errors.items():
                console.print(f"[yellow]MCP server {server} unavailable:[/] {error}")
            console.print(f"[dim]thread {thread_id}[/]")
            turn: str | Command[Any] = args.question
            while True:
                async for item in run_stream(graph, turn, config, RunContext(run=run)):
                    if isinstance(item, Token):
                        if not args.json:
                            printer.token(item.text, item.message)
                    else:
                        printer.event(item)
                pending = await pending_requests(graph, config)
                if not pending:
                    break
                turn = Command(resume=await ask_in_thread(console, pending[0]["value"]))
        values = (await graph.aget_state(config)).values
    if args.json:
        keys = (
            "query",
            "route",
            "assessment",
            "clarification",
            "candidate_tools",
            "plan",
            "plan_log",
            "results",
            "evidence",
            "discarded",
            "missing",
            "answer",
        )
        print(json.dumps({"thread_id": thread_id, **{k: values.get(k) for k in keys}}, indent=2, default=str))
    else:
        printer.finish()
        answer: Answer | None = values.get("answer")
        if answer is not None:
            print_answer(console, answer, printer.streamed)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``aisearch`` command."""
    parser = argparse.ArgumentParser(prog="aisearch", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    parser.add_argument(
        "--config", help="config file (default $AISEARCH_CONFIG or ~/.config/aisearch/config.toml)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ask_parser = sub.add_parser("ask", help="answer a question")
    ask_parser.add_argument("question")
    ask_parser.add_argument("--json", action="store_true", help="print the final state as JSON")
    ask_parser.add_argument("--thread", help="continue the conversation of this thread id")
    ask_parser.add_argument(
        "--db",
        help="thread store: a SQLite file (default ~/.local/share/aisearch/threads.sqlite) or a postgresql:// URL",
    )
    ask_parser.add_argument("--mcp-config", help='an {"mcpServers": {...}} JSON file with extra MCP servers')
    ask_parser.add_argument(
        "--interactive",
        action="store_true",
        help="the Master may ask on the terminal what an ambiguous question means (needs a terminal)",
    )
    ask_parser.add_argument(
        "--review-plan",
        action="store_true",
        help="show the Planner's first plan on the terminal to approve, edit or reject (needs a terminal)",
    )
    ask_parser.add_argument(
        "--no-cache",
        action="store_true",
        help="answer afresh: read neither the answer cache nor the tool-call cache (the answer is still kept)",
    )
    ask_parser.add_argument(
        "--no-default-index",
        action="store_true",
        help="do not index the Python standard library docs on this run when they are missing "
        "(AISEARCH_DOCSEARCH_DEFAULT_BUILD=0 skips it always)",
    )
    ask_parser.set_defaults(func=lambda args: asyncio.run(ask(args)))
    register_models(sub)
    register_index(sub)
    register_docs(sub)
    register_eval(sub)
    register_bfcl(sub)
    register_distill(sub)
    register_executor(sub)
    register_bench(sub)
    register_tools(sub)
    register_tools_config(sub)
    register_serve(sub)
    register_mcp(sub)
    return parser


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; for a command that takes a program after ``--`` (``tools add NAME -- CMD …``),
    what follows the first ``--`` is its ``command``, whatever options it has."""
    if "--" in argv:
        cut = argv.index("--")
        head = parser.parse_args(argv[:cut])
        if getattr(head, "command_after_dashes", False):
            head.command = argv[cut + 1 :]
            return head
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``aisearch`` command."""
    args = parse_arguments(build_parser(), sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return int(args.func(args) or 0)
    except (
        UserError,
        EndpointUnreachable,
        ConfigError,
        ServerConfigError,
        ModelUnavailableError,
        LocalServerError,
        AssemblyError,
    ) as exc:
        print(f"aisearch: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
