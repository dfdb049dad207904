"""The tool dependency graph (NaviAgent): tools as nodes, "output feeds input" as weighted edges.

Edges come from two places:

- the schemas: a tool that needs an identifier another tool produces (``tools/needs.py``), and,
  across servers, a tool whose description's first line names what another tool's text parameter
  is named after, when it does not take that parameter itself (``clock.now`` gives a *date*;
  ``clock.shift_date`` takes a ``date``);
- the history: two tools chained in a run (a task that depended on another task, each bound to a
  tool) form an edge, whatever their schemas say.

Weights learn from history. After every task the Executor records each tool's calls (ok or not)
and each chain it completed; a node's or an edge's weight is its Laplace-smoothed success rate
``(ok + 1) / (ok + failed + 2)`` (0.5 with no history). The counts live in SQLite beside the
thread checkpoints, so they survive restarts. The Planner is shown the chains among its candidates
that have succeeded before; the Executor tries backups with the better record first.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import networkx as nx

from tools.hub import ToolSpec
from tools.needs import tool_needs
from tools.schema import type_label

SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_stats (tool TEXT PRIMARY KEY, ok INTEGER NOT NULL, failed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chain_stats (
    source TEXT NOT NULL, target TEXT NOT NULL, ok INTEGER NOT NULL, failed INTEGER NOT NULL,
    PRIMARY KEY (source, target)
);
"""
# parameter words too generic to say what a tool takes (every tool has a "query" or a "text")
GENERIC_WORDS = frozenset("query q text input value name k n limit id ids args data string number".split())
MAX_HINTS = 3
_LOCK = threading.Lock()


def weight(ok: int, failed: int) -> float:
    """The Laplace-smoothed success rate of ``ok`` successes and ``failed`` failures."""
    return round((ok + 1) / (ok + failed + 2), 4)


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
    return [word.lower() for word in spaced.split() if len(word) > 2 and word.lower() not in GENERIC_WORDS]


def schema_edges(specs: Sequence[ToolSpec]) -> list[tuple[str, str, str]]:
    """``(source, target, why)`` for each tool whose output can feed another's input, by schema."""
    edges: list[tuple[str, str, str]] = []
    for target in specs:
        for argument, producer in tool_needs(target, specs).items():
            edges.append((producer, target.name, f"{argument} (identifier)"))
    linked = {(source, target) for source, target, _ in edges}
    for target in specs:
        for argument, prop in target.parameters.get("properties", {}).items():
            words = _words(argument)
            if not words or "string" not in type_label(prop):
                continue
            for source in specs:
                first = source.description.split("\n")[0].lower()
                pair = (source.name, target.name)
                takes_it = argument in source.parameters.get("properties", {})  # the words name its input
                if source.name == target.name or pair in linked or takes_it:
                    continue
                if all(re.search(rf"\b{re.escape(word)}", first) for word in words):
                    edges.append((*pair, f"{argument} (named in its description)"))
                    linked.add(pair)
    return edges


class ToolHistory:
    """Success counts of tools and of tool chains, in a SQLite file; and, in memory, the tool each
    task of the current turns ended with (to see the chains its dependants complete)."""

    def __init__(self, path: Path) -> None:
        """Open (creating when missing) the history at ``path``."""
        self.path = path
        self.task_tools: dict[tuple[str, str], str] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        with _LOCK, closing(sqlite3.connect(path, timeout=10)) as db, db:
            db.executescript(SCHEMA)

    def record(self, tools: Iterable[tuple[str, bool]], chains: Iterable[tuple[str, str, bool]] = ()) -> None:
        """Add the outcomes of tool calls ``(tool, ok)`` and of chains ``(source, target, ok)``."""
        tool_rows = [(tool, int(ok), int(not ok)) for tool, ok in tools]
        chain_rows = [(source, target, int(ok), int(not ok)) for source, target, ok in chains]
        if not tool_rows and not chain_rows:
            return
        with _LOCK, closing(sqlite3.connect(self.path, timeout=10)) as db, db:
            db.executemany(
                "INSERT INTO tool_stats VALUES (?, ?, ?) ON CONFLICT(tool) DO UPDATE SET "
                "ok = ok + excluded.ok, failed = failed + excluded.failed",
                tool_rows,
            )
            db.executemany(
                "INSERT INTO chain_stats VALUES (?, ?, ?, ?) ON CONFLICT(source, target) DO UPDATE SET "
                "ok = ok + excluded.ok, failed = failed + excluded.failed",
                chain_rows,
            )

    def tool_counts(self) -> dict[str, tuple[int, int]]:
        """Tool -> (ok, failed)."""
        with _LOCK, closing(sqlite3.connect(self.path, timeout=10)) as db:
            return {tool: (ok, failed) for tool, ok, failed in db.execute("SELECT * FROM tool_stats")}

    def chain_counts(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(source, target) -> (ok, failed)."""
        with _LOCK, closing(sqlite3.connect(self.path, timeout=10)) as db:
            rows = db.execute("SELECT * FROM chain_stats")
            return {(source, target): (ok, failed) for source, target, ok, failed in rows}


def history_path(db_path: Path) -> Path:
    """Where the tool history lives: beside the thread checkpoints (``threads.sqlite``)."""
    return db_path.parent / "tool_history.sqlite"


def build_graph(specs: Sequence[ToolSpec], history: ToolHistory | None = None) -> nx.DiGraph[str]:
    """The dependency graph of ``specs``: schema edges and recorded chains, weighted by history."""
    graph: nx.DiGraph[str] = nx.DiGraph()
    tools = history.tool_counts() if history else {}
    chains = history.chain_counts() if history else {}
    for spec in specs:
        ok, failed = tools.get(spec.name, (0, 0))
        graph.add_node(spec.name, server=spec.server, ok=ok, failed=failed, weight=weight(ok, failed))
    for source, target, why in schema_edges(specs):
        graph.add_edge(source, target, kinds=["schema"], why=why, ok=0, failed=0, weight=weight(0, 0))
    for (source, target), (ok, failed) in chains.items():
        if source not in graph or target not in graph:
            continue
        if graph.has_edge(source, target):
            graph.edges[source, target]["kinds"].append("history")
        else:
            graph.add_edge(source, target, kinds=["history"], why="chained in earlier runs")
        graph.edges[source, target].update(ok=ok, failed=failed, weight=weight(ok, failed))
    return graph


def chain_hints(graph: nx.DiGraph[str], candidates: Iterable[str]) -> list[str]:
    """The likeliest chains among ``candidates``: edges that succeeded before, best first."""
    names = set(candidates)
    edges = [
        (data["weight"], source, target)
        for source, target, data in graph.subgraph(names).edges(data=True)
        if data.get("ok", 0) > 0 and data["weight"] >= 0.5
    ]
    edges.sort(key=lambda edge: (-edge[0], edge[1], edge[2]))
    return [
        f"{source} -> {target} (worked {weight:.0%} of the time)"
        for weight, source, target in edges[:MAX_HINTS]
    ]


def ranked_backups(
    peers: Sequence[str], similarity: Mapping[str, float], counts: Mapping[str, tuple[int, int]]
) -> list[str]:
    """``peers`` with the better success record (``counts``: tool -> (ok, failed)) first, then the
    more similar."""

    def key(peer: str) -> tuple[float, float, str]:
        return (-weight(*counts.get(peer, (0, 0))), -similarity.get(peer, 0.0), peer)

    return sorted(peers, key=key)


def graph_json(graph: nx.DiGraph[str]) -> dict[str, Any]:
    """The graph as node-link JSON (networkx's format)."""
    return nx.node_link_data(graph, edges="edges")


def draw_graph(graph: nx.DiGraph[str], path: Path) -> None:
    """Draw the graph to a PNG: nodes by server, edges as thick as their weight."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(10, 7))
    layout = nx.spring_layout(graph, seed=0)
    servers = sorted({data.get("server", "") for _, data in graph.nodes(data=True)})
    colours = [servers.index(data.get("server", "")) for _, data in graph.nodes(data=True)]
    nx.draw_networkx_nodes(graph, layout, node_color=colours, cmap="tab10", node_size=600, ax=axes)
    nx.draw_networkx_labels(graph, layout, font_size=8, ax=axes)
    widths = [1 + 4 * data.get("weight", 0.5) for _, _, data in graph.edges(data=True)]
    nx.draw_networkx_edges(graph, layout, width=widths, arrows=True, ax=axes, edge_color="grey")
    axes.set_axis_off()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
