"""``aisearch eval tool-retrieval``: servers and tools retrieved for LiveMCPBench-style tasks.

Ground truth (as in ``shared/notes/tool-retrieval-baselines.md``): each numbered line of a task's
``Annotator Metadata.Tools`` is a tool name; its group is every catalogue server with a tool of
that exact name (any one counts as found). Identical groups are merged, and a group that strictly
contains another group of the same task is dropped (it is already implied). A label no server has
is unmapped; a task without a mapped label is not scored.

Metrics, averaged over the scored tasks:

* ``server_recall@k``: the share of a task's groups with a member among the top-k servers;
* ``server_ndcg@5``: binary gain 1/log2(rank+1) for a server that satisfies a group no higher server
  satisfied, over the ideal min(groups, 5) hits;
* ``tool_recall@k``: the share of the task's mapped label names among the top-k tools' names;
* ``complete@10``: the share of tasks whose every mapped label is among the top 10 tools.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tools.catalog.retrieve import Retrieval, RetrievalOptions, ToolRetriever, record_kinds

_NUMBER = re.compile(r"^\s*\d+\.\s*")
AUGMENTED = record_kinds(synthetic_queries=True)

VARIANTS: dict[str, dict[str, Any]] = {
    "full": {},
    "dense_descriptions": {"kinds": frozenset({"server"}), "bm25_weight": 0.0, "decompose": "none"},
    "no_decomposition": {"decompose": "none"},
    "parts_only": {"keep_query": False},
    "no_implicit_needs": {"implicit_needs": False},
    "implied_needs_open": {"implicit_servers": None},
    "single_vector": {"kinds": frozenset({"summary"})},
    "no_bm25": {"bm25_weight": 0.0},
    "bm25_only": {"dense": False},
    "augmented": {"kinds": AUGMENTED},
    "queries_only": {"kinds": frozenset({"query"})},
    **{f"synthetic_{n}": {"kinds": AUGMENTED, "synthetic_limit": n} for n in (5, 10, 20, 40)},
}
"""Named option sets for the ablations (each changes the default method in one respect; the default
leaves the synthetic queries out, ``augmented`` adds them)."""
NEEDS_SYNTHETIC = ("augmented", "queries_only", "synthetic_5", "synthetic_10", "synthetic_20", "synthetic_40")
"""Variants that mean nothing until ``aisearch tools augment`` has cached synthetic queries."""


@dataclass
class Task:
    """One task: its question, its label names, the mapped ones and their server groups."""

    id: str
    question: str
    labels: list[str]
    mapped: list[str]
    groups: list[frozenset[str]]


def labels_of(task: dict[str, Any]) -> list[str]:
    """The distinct tool names of ``Annotator Metadata.Tools`` (numbering stripped)."""
    raw = str((task.get("Annotator Metadata") or {}).get("Tools") or "")
    names = [_NUMBER.sub("", line).strip() for line in raw.splitlines()]
    return list(dict.fromkeys(name for name in names if name))


def server_groups(labels: Sequence[str], owners: dict[str, list[str]]) -> list[frozenset[str]]:
    """The acceptable-server groups of the mapped labels: merged, strict supersets dropped."""
    groups = list(dict.fromkeys(frozenset(owners[name]) for name in labels if name in owners))
    return [g for g in groups if not any(other < g for other in groups)]


def load_tasks(path: Path, owners: dict[str, list[str]]) -> list[Task]:
    """The tasks of a LiveMCPBench annotations file, with labels mapped through ``owners``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    tasks = []
    for raw in data:
        labels = labels_of(raw)
        mapped = [name for name in labels if name in owners]
        tasks.append(
            Task(str(raw.get("task_id")), str(raw["Question"]), labels, mapped, server_groups(labels, owners))
        )
    return tasks


def server_recall(groups: Sequence[frozenset[str]], ranked: Sequence[str], k: int) -> float:
    """The share of ``groups`` with a member among the first ``k`` of ``ranked``."""
    top = set(ranked[:k])
    return sum(1 for group in groups if group & top) / len(groups)


def server_ndcg(groups: Sequence[frozenset[str]], ranked: Sequence[str], k: int = 5) -> float:
    """Binary nDCG@k where a server gains only when it satisfies a group not yet satisfied."""
    open_groups = list(groups)
    dcg = 0.0
    for rank, server in enumerate(ranked[:k], start=1):
        hit = next((g for g in open_groups if server in g), None)
        if hit is not None:
            open_groups.remove(hit)
            dcg += 1 / math.log2(rank + 1)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(groups), k) + 1))
    return dcg / ideal


def tool_recall(labels: Sequence[str], ranked_tools: Sequence[str], k: int) -> float:
    """The share of ``labels`` among the names of the first ``k`` tools."""
    top = set(ranked_tools[:k])
    return sum(1 for name in labels if name in top) / len(labels)


def summarize(tasks: Sequence[Task], results: Sequence[Retrieval]) -> dict[str, Any]:
    """The JSON contract's metrics for ``tasks`` and their retrievals (same order)."""
    scored = [(t, r) for t, r in zip(tasks, results, strict=True) if t.groups]

    def mean(values: list[float]) -> float:
        return round(statistics.fmean(values), 4) if values else 0.0

    def servers(r: Retrieval) -> list[str]:
        return [hit.server for hit in r.servers]

    def names(r: Retrieval) -> list[str]:
        return [hit.tool for hit in r.tools]

    return {
        "n_tasks": len(tasks),
        "n_scored": len(scored),
        **{
            f"server_recall@{k}": mean([server_recall(t.groups, servers(r), k) for t, r in scored])
            for k in (1, 3, 5)
        },
        "server_ndcg@5": mean([server_ndcg(t.groups, servers(r), 5) for t, r in scored]),
        **{
            f"tool_recall@{k}": mean([tool_recall(t.mapped, names(r), k) for t, r in scored]) for k in (5, 10)
        },
        "complete@10": mean([float(tool_recall(t.mapped, names(r), 10) == 1.0) for t, r in scored]),
        "unmapped_labels": sum(len(t.labels) - len(t.mapped) for t in tasks),
        "unmapped_label_names": sorted({name for t in tasks for name in t.labels if name not in t.mapped}),
        "query_ms_p50": round(statistics.median([r.ms for r in results]), 1) if results else 0.0,
        "decompose_ms_p50": round(statistics.median([r.decompose_ms for r in results]), 1)
        if results
        else 0.0,
    }


def variant_options(name: str, base: RetrievalOptions) -> RetrievalOptions:
    """``base`` with the ablation ``name`` applied.

    Raises:
        ValueError: For an unknown variant.
    """
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")
    return replace(base, **VARIANTS[name])


def run_tasks(
    retriever: ToolRetriever,
    tasks: Sequence[Task],
    options: RetrievalOptions,
    *,
    chat: Any = None,
    on_task: Callable[[int], None] | None = None,
) -> list[Retrieval]:
    """Retrieve for every task's question, one at a time (so each has its own latency)."""
    results = []
    for i, task in enumerate(tasks, start=1):
        results.append(retriever.search(task.question, options, chat=chat))
        if on_task:
            on_task(i)
    return results
