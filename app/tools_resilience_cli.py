"""``aisearch tools toolkits|graph|refine``: what makes tool use resilient, from the command line.

``toolkits`` groups equivalent tools (``tools/toolkits.py``), ``graph`` exports the tool dependency
graph with its learned weights (``tools/tool_graph.py``), ``refine`` runs DRAFT on a server's tools
(``tools/draft.py``). Registered into the ``tools`` group by ``app/tools_cli.py``; what both share is in
``app/catalog_args.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from app.catalog_args import add_catalog_args, decomposer_chat, guard_catalog, open_catalog
from app.commands import echo


def cmd_toolkits(args: argparse.Namespace) -> int:
    """Group the catalogue's tools into toolkits of equivalent tools (cached per catalogue)."""
    from core.settings import load_settings
    from tools.catalog.run_catalog import tool_specs
    from tools.toolkits import load_toolkits

    settings = load_settings()
    specs = [spec for server in open_catalog(args).servers.values() for spec in tool_specs(server)]
    chat = None if args.no_model else decomposer_chat(0.0, 64)
    k = settings.toolkit_k if args.k is None else args.k
    seed = settings.toolkit_seed if args.seed is None else args.seed
    toolkits, computed = load_toolkits(specs, chat=chat, k=k, seed=seed)
    if args.json:
        echo(json.dumps(toolkits.to_json(), indent=2, ensure_ascii=False))
        return 0
    how = f"silhouette {toolkits.silhouette}" if toolkits.silhouette is not None else "one group"
    echo(
        f"{len(toolkits.groups)} toolkits of {len(specs)} tools (k={toolkits.k}, {how}; {'computed' if computed else 'cached'})"
    )
    for number, group in enumerate(toolkits.groups, 1):
        echo(f"toolkit {number}:")
        for name in group:
            echo(f"  {name}  - {toolkits.descriptions.get(name, '')}")
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    """Export the tool dependency graph (schema edges, learned weights) as JSON and a PNG."""
    from core.settings import load_settings
    from tools.catalog.run_catalog import tool_specs
    from tools.tool_graph import ToolHistory, build_graph, draw_graph, graph_json, history_path

    specs = [spec for server in open_catalog(args).servers.values() for spec in tool_specs(server)]
    graph = build_graph(specs, ToolHistory(history_path(load_settings().db_path)))
    out = Path(args.out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path, png_path = out.with_suffix(".json"), out.with_suffix(".png")
    json_path.write_text(json.dumps(graph_json(graph), indent=2, ensure_ascii=False))
    draw_graph(graph, png_path)
    learned = sum(1 for _, _, data in graph.edges(data=True) if "history" in data["kinds"])
    echo(f"{graph.number_of_nodes()} tools, {graph.number_of_edges()} edges ({learned} learned from runs)")
    echo(f"wrote {json_path} and {png_path}")
    return 0


def cmd_refine(args: argparse.Namespace) -> int:
    """DRAFT: refine the documents of one server's tools against the live tools (or review them)."""
    from tools.refinements import load_refinement, refined_path

    if args.diff or args.drop:
        names = args.tool or [path.stem for path in refined_path("x").parent.glob(f"{args.server}.*.json")]
        if not names:
            raise ValueError(
                f"no refined documents for {args.server!r} (run `aisearch tools refine {args.server}`)"
            )
        for name in names:
            qualified = name if "." in name else f"{args.server}.{name}"
            refinement = load_refinement(qualified)
            if refinement is None:
                raise ValueError(f"no refined document for {qualified}")
            if args.drop:
                refined_path(qualified).unlink()
                echo(f"{qualified}: back to its original document")
            else:
                echo(f"# {qualified} ({refinement.stop}; deltas {refinement.deltas})")
                echo(refinement.diff() or "(no change)")
        return 0
    return asyncio.run(_refine(args))


async def _refine(args: argparse.Namespace) -> int:
    from core.settings import load_settings
    from tools.draft import REPLY_TOKENS, DraftLimits, refine_tool
    from tools.hub import ToolHub, original_spec
    from tools.index.embedder import shared_embedder
    from tools.refinements import save_refinement
    from tools.registry import load_connections

    settings = load_settings()
    connections = load_connections(settings.mcp_config)
    if args.server not in connections:
        raise ValueError(f"no MCP server {args.server!r} (known: {', '.join(sorted(connections))})")
    limits = DraftLimits(phi=args.phi, tau=args.tau, max_rounds=args.rounds)
    chat = decomposer_chat(0.3, REPLY_TOKENS)
    async with ToolHub.open({args.server: connections[args.server]}) as hub:
        if args.server in hub.server_errors:
            raise ValueError(f"MCP server {args.server} did not start: {hub.server_errors[args.server]}")
        wanted = {name if "." in name else f"{args.server}.{name}" for name in args.tool or []}
        specs = [spec for name, spec in hub.specs.items() if not wanted or name in wanted]
        for spec in specs:
            refinement = await refine_tool(original_spec(spec), hub, chat, shared_embedder(), limits)
            path = save_refinement(refinement)
            echo(
                f"{spec.name}: {len(refinement.versions)} versions, {len(refinement.trials)} trials "
                f"({refinement.rejected} rejected as repeats), stopped: {refinement.stop}; deltas {refinement.deltas}"
            )
            echo(f"  stored beside the original in {path}; review with --diff, undo with --drop")
    return 0


def register_resilience(group: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``toolkits``, ``graph`` and ``refine`` to the ``tools`` group."""
    from tools.draft import DraftLimits

    toolkits = group.add_parser(
        "toolkits", help="groups of equivalent tools (k-means++ over model-written descriptions; cached)"
    )
    add_catalog_args(toolkits)
    toolkits.add_argument(
        "--k", type=int, help="number of toolkits (default: toolkit_k; 0 chooses by silhouette)"
    )
    toolkits.add_argument("--seed", type=int, help="k-means++ seed (default: toolkit_seed)")
    toolkits.add_argument(
        "--no-model",
        action="store_true",
        help="describe tools by their documents' first lines, no model call",
    )
    toolkits.add_argument("--json", action="store_true")
    toolkits.set_defaults(func=guard_catalog(cmd_toolkits))
    graph = group.add_parser(
        "graph", help="the tool dependency graph with learned weights, as JSON and a PNG"
    )
    add_catalog_args(graph)
    graph.add_argument(
        "--out", default="tool-graph", help="output path without suffix (default: ./tool-graph)"
    )
    graph.set_defaults(func=guard_catalog(cmd_graph))
    refine = group.add_parser(
        "refine",
        help="DRAFT: rewrite a server's tool documents from trials of the live tools (kept beside the originals)",
    )
    refine.add_argument("server")
    refine.add_argument("--tool", action="append", help="only this tool (repeatable)")
    refine.add_argument("--rounds", type=int, default=DraftLimits.max_rounds, help="round budget per tool")
    refine.add_argument(
        "--phi", type=float, default=DraftLimits.phi, help="reject a trial this similar to an earlier one"
    )
    refine.add_argument(
        "--tau", type=float, default=DraftLimits.tau, help="stop when consecutive versions are this alike"
    )
    refine.add_argument("--diff", action="store_true", help="show the refined documents' diffs, run nothing")
    refine.add_argument(
        "--drop", action="store_true", help="delete the refined documents (back to the originals)"
    )
    refine.set_defaults(func=guard_catalog(cmd_refine))
