"""``aisearch tools list|show|index|augment|search`` (the MCP catalogue and its index;
``toolkits``, ``graph`` and ``refine`` are in ``app/tools_resilience_cli.py``) and
``aisearch eval tool-retrieval`` (servers and tools retrieved for annotated tasks)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from app.catalog_args import add_catalog_args, decomposer_chat, guard_catalog, open_catalog
from app.commands import command_group, echo
from app.tools_resilience_cli import register_resilience


def _collection(args: argparse.Namespace) -> str:
    """One collection per set of catalogue sources (``catalog`` for the default one)."""
    from tools.catalog.paths import collection_name

    return collection_name(args.catalog or [], bundled=not args.no_bundled)


def _open_index(catalog: Any, collection: str, quiet: bool = False) -> Any:
    """Build or reuse the catalogue's index (with its cached synthetic queries), with a progress bar."""
    from rich.progress import Progress

    from tools.catalog.augment import cached_queries
    from tools.catalog.index import open_tool_index

    with Progress(transient=True, disable=quiet) as progress:
        task = progress.add_task("embedding the catalogue", total=None)
        return open_tool_index(
            catalog,
            collection=collection,
            synthetic=cached_queries(catalog),
            on_progress=lambda done, total: progress.update(task, completed=done, total=total),
        )


def cmd_list(args: argparse.Namespace) -> int:
    """List the catalogue's servers."""
    catalog = open_catalog(args)
    rows = [
        {
            "server": s.id,
            "tools": len(s.tools),
            "category": s.category,
            "source": s.source,
            "startable": bool(s.connections),
        }
        for s in catalog.servers.values()
    ]
    if args.json:
        echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    echo(f"{len(catalog)} servers, {catalog.tool_count()} tools")
    for row in rows:
        echo(
            f"  {row['server']}  ({row['tools']} tools, {row['category'] or 'uncategorised'}; {row['source']})"
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """Show one server: its description, how it starts and its tools."""
    catalog = open_catalog(args)
    server = catalog.servers.get(args.name)
    if server is None:
        raise ValueError(f"no server {args.name!r} in the catalogue (see `aisearch tools list`)")
    echo(f"{server.id}  [{server.category or 'uncategorised'}; {server.source}]")
    echo(server.description or "(no description)")
    echo(
        "start: "
        + (json.dumps(server.connections, ensure_ascii=False) if server.connections else "not startable")
    )
    for tool in server.tools:
        echo(f"  {tool.name}: {tool.description.splitlines()[0] if tool.description else ''}")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """Build the catalogue's index, or report that it is up to date."""
    catalog = open_catalog(args)
    started = time.perf_counter()
    index = _open_index(catalog, _collection(args))
    seconds = time.perf_counter() - started
    verb = f"embedded {index.embedded} of" if index.embedded else "reused (up to date),"
    echo(f"{verb} {len(index.entries)} records for {len(catalog)} servers in {seconds:.1f} s")
    return 0


def cmd_augment(args: argparse.Namespace) -> int:
    """Generate and cache synthetic queries per server (TURA), with a progress bar."""
    from rich.progress import Progress

    from core.settings import load_settings
    from tools.catalog.augment import TEMPERATURE, augment, queries_format

    catalog = open_catalog(args)
    chat = decomposer_chat(
        args.temperature or TEMPERATURE, max_tokens=60 * args.n, response_format=queries_format(args.n)
    )
    with Progress() as progress:
        task = progress.add_task("synthetic queries", total=len(catalog))
        report = augment(
            catalog, chat, n=args.n, force=args.force, on_server=lambda _: progress.advance(task)
        )
    echo(f"generated {len(report.generated)}, cached {len(report.cached)}, failed {len(report.failed)}")
    if not load_settings().tool_synthetic_queries:
        echo(
            "runs retrieve over these queries only with tool_synthetic_queries = true in the config "
            "(or AISEARCH_TOOL_SYNTHETIC_QUERIES=1); measure first: `aisearch eval tool-retrieval "
            "--ablations` compares `full` with `augmented`"
        )
    for server, error in report.failed.items():
        echo(f"  {server}: {error}", err=True)
    return 0 if not report.failed else 1


def cmd_search(args: argparse.Namespace) -> int:
    """Retrieve the top servers and tools for a query."""
    from dataclasses import asdict

    from core.settings import load_settings
    from tools.catalog.retrieve import RetrievalOptions, ToolRetriever, record_kinds

    index = _open_index(open_catalog(args), _collection(args), quiet=args.json)
    chat = decomposer_chat(0.0, 256) if args.decompose == "llm" else None
    kinds = record_kinds(args.synthetic_queries or load_settings().tool_synthetic_queries)
    result = ToolRetriever(index).search(
        args.query, RetrievalOptions(k=args.k, decompose=args.decompose, kinds=kinds), chat=chat
    )
    if args.json:
        echo(json.dumps(asdict(result), indent=2, ensure_ascii=False))
        return 0
    echo(f"intents: {' | '.join(result.intents)}  ({result.ms:.0f} ms)")
    for hit in result.servers:
        echo(f"{hit.score:6.3f}  {hit.server}  (via {hit.via}: {hit.intent})")
        for tool in hit.tools:
            echo(f"        {tool.score:6.3f}  {tool.tool}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """Measure server and tool retrieval on annotated tasks (the JSON contract of issue 12)."""
    from evals.tool_retrieval import (
        NEEDS_SYNTHETIC,
        VARIANTS,
        load_tasks,
        run_tasks,
        summarize,
        variant_options,
    )
    from tools.catalog.retrieve import RetrievalOptions, ToolRetriever

    args.no_bundled = True  # the labels name the catalogue's servers only
    catalog = open_catalog(args)
    retriever = ToolRetriever(_open_index(catalog, _collection(args), quiet=args.json))
    tasks = load_tasks(Path(args.tasks).expanduser(), catalog.owners())
    chat = decomposer_chat(0.0, 256) if args.decompose == "llm" else None
    base = RetrievalOptions(k=max(args.k, 5), decompose=args.decompose, n_tools=10)
    names = list(VARIANTS) if args.ablations else [args.variant]
    if not any(entry.kind == "query" for entry in retriever.entries):  # no `aisearch tools augment` yet
        names = [name for name in names if name not in NEEDS_SYNTHETIC]
    reports = {}
    for name in names:
        report = summarize(tasks, run_tasks(retriever, tasks, variant_options(name, base), chat=chat))
        reports[name] = {"variant": name, "decompose": args.decompose, **report}
    if args.json:
        echo(json.dumps(reports if args.ablations else reports[args.variant], indent=2, ensure_ascii=False))
        return 0
    keys = ["server_recall@1", "server_recall@3", "server_recall@5", "server_ndcg@5", "tool_recall@5"]
    keys += ["tool_recall@10", "complete@10", "query_ms_p50"]
    echo("| variant | " + " | ".join(keys) + " |")
    echo("|---" * (len(keys) + 1) + "|")
    for name, report in reports.items():
        echo(f"| {name} | " + " | ".join(str(report[key]) for key in keys) + " |")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch tools …`` and ``aisearch eval tool-retrieval``."""
    from tools.catalog.decompose import MODES

    group = command_group(subparsers, "tools", "the MCP catalogue and its index", "tools_command")
    listing = group.add_parser("list", help="the catalogue's servers")
    add_catalog_args(listing)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=guard_catalog(cmd_list))
    show = group.add_parser("show", help="one server and its tools")
    show.add_argument("name")
    add_catalog_args(show)
    show.set_defaults(func=guard_catalog(cmd_show))
    index = group.add_parser("index", help="build the catalogue's index (a no-op when nothing changed)")
    add_catalog_args(index)
    index.set_defaults(func=guard_catalog(cmd_index))
    aug = group.add_parser("augment", help="synthetic queries per server from the configured LLM (cached)")
    add_catalog_args(aug)
    aug.add_argument("--n", type=int, default=20, help="queries per server (default 20)")
    aug.add_argument("--temperature", type=float, help="sampling temperature (default 1.2)")
    aug.add_argument("--force", action="store_true", help="regenerate cached queries")
    aug.set_defaults(func=guard_catalog(cmd_augment))
    search = group.add_parser("search", help="the top servers and tools for a query")
    search.add_argument("query")
    add_catalog_args(search)
    search.add_argument("--k", type=int, default=5)
    search.add_argument("--decompose", choices=MODES, default="rules")
    search.add_argument(
        "--synthetic-queries",
        action="store_true",
        help="retrieve over the cached synthetic queries too (default: the tool_synthetic_queries setting)",
    )
    search.add_argument("--json", action="store_true")
    search.set_defaults(func=guard_catalog(cmd_search))
    register_resilience(group)

    evals = command_group(subparsers, "eval", "evaluations", "eval_command")
    tool_eval = evals.add_parser(
        "tool-retrieval",
        help="server and tool recall on annotated tasks (LiveMCPBench format)",
        description="Index a catalogue (or reuse its index), retrieve for every task's Question and score "
        "the servers and tools of its annotated tool names.",
    )
    add_catalog_args(tool_eval, bundled=False)
    tool_eval.add_argument(
        "--tasks", required=True, help="annotated tasks JSON (Question, Annotator Metadata.Tools)"
    )
    tool_eval.add_argument("--k", type=int, default=5, help="servers retrieved (at least 5)")
    tool_eval.add_argument("--decompose", choices=MODES, default="rules")
    tool_eval.add_argument("--variant", default="full", help="one ablation (see evals/tool_retrieval.py)")
    tool_eval.add_argument("--ablations", action="store_true", help="every variant, as a table")
    tool_eval.add_argument("--json", action="store_true", help="print JSON")
    tool_eval.set_defaults(func=guard_catalog(cmd_eval))
