"""The plots of a QA run, as PNG files beside its report (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.record_metrics import ordered_systems


def _bars(ax: Any, groups: Sequence[str], series: Mapping[str, Sequence[float | None]], ylabel: str) -> None:
    width = 0.8 / max(len(series), 1)
    for i, (label, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [v or 0.0 for v in values], width, label=label)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1)
    ax.legend(fontsize="small")


def plots(
    records: Sequence[Mapping[str, Any]], summary: Mapping[str, Any], out_dir: str | Path
) -> list[Path]:
    """Draw the run's plots as PNG files (matplotlib, Agg backend).

    * ``accuracy_by_type.png``: EM and F1 per question type, per system;
    * ``accuracy_by_route.png``: aisearch EM and F1 per route, with RAG on the same questions;
    * ``latency.png``: distribution of per-question latency, per system;
    * ``nwr_by_type.png``: F1-based NWR with its 95% interval per question type (and overall);
    * ``node_seconds.png``: mean seconds per aisearch node.

    A plot with no data is skipped.

    Args:
        records: the per-question records (latency distributions come from them).
        summary: the run's summary.
        out_dir: where to write the PNGs (created if missing).

    Returns:
        The paths written.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = ordered_systems(summary.get("systems") or {})
    written: list[Path] = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=100)
        written.append(path)

    by_type = summary.get("by_type") or {}
    if by_type:
        types = list(by_type)
        fig = Figure(figsize=(10, 4))
        for ax, metric in zip(fig.subplots(1, 2), ("em", "f1"), strict=True):
            series = {
                name: [by_type[t][name][metric] if name in by_type[t] else None for t in types]
                for name in names
            }
            _bars(ax, types, series, metric.upper())
            ax.set_title(f"{metric.upper()} by question type")
        save(fig, "accuracy_by_type.png")

    by_route = summary.get("by_route") or {}
    if by_route:
        routes = list(by_route)
        fig = Figure(figsize=(max(6, 1.6 * len(routes) + 2), 4))
        ax = fig.subplots()
        series = {
            "aisearch EM": [by_route[r].get("em") for r in routes],
            "aisearch F1": [by_route[r].get("f1") for r in routes],
        }
        if any(by_route[r].get("rag_em") is not None for r in routes):
            series["RAG EM"] = [by_route[r].get("rag_em") for r in routes]
            series["RAG F1"] = [by_route[r].get("rag_f1") for r in routes]
        _bars(ax, [f"{r}\n(n={by_route[r].get('n', 0)})" for r in routes], series, "score")
        ax.set_title("Accuracy by aisearch route")
        save(fig, "accuracy_by_route.png")

    latencies = {
        name: [
            float(o["latency_s"])
            for r in records
            if isinstance(o := (r.get("systems") or {}).get(name), dict)
            and isinstance(o.get("latency_s"), int | float)
        ]
        for name in names
    }
    latencies = {name: v for name, v in latencies.items() if v}
    if latencies:
        fig = Figure(figsize=(6, 4))
        ax = fig.subplots()
        ax.boxplot(list(latencies.values()))
        ax.set_xticks(range(1, len(latencies) + 1), list(latencies))
        ax.set_ylabel("seconds per question")
        ax.set_title("Latency per system")
        save(fig, "latency.png")

    points = [(t, e.get("nwr"), e.get("nwr_ci")) for t, e in by_type.items() if e.get("paired_n")]
    if summary.get("paired_n"):
        points.append(("all", summary.get("nwr"), summary.get("nwr_ci")))
    if summary.get("nwr_judge_ci"):
        points.append(("all (judge)", summary.get("nwr_judge"), summary.get("nwr_judge_ci")))
    if points:
        fig = Figure(figsize=(6, 4))
        ax = fig.subplots()
        xs = list(range(len(points)))
        values = [p[1] or 0.0 for p in points]
        low = [max(v - p[2][0], 0.0) for v, p in zip(values, points, strict=True)]
        high = [max(p[2][1] - v, 0.0) for v, p in zip(values, points, strict=True)]
        ax.errorbar(xs, values, yerr=[low, high], fmt="o", capsize=5)
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_xticks(xs, [p[0] for p in points])
        ax.set_ylim(-1.05, 1.05)
        ax.set_ylabel("NWR (aisearch vs RAG)")
        ax.set_title("NWR with 95% bootstrap interval")
        save(fig, "nwr_by_type.png")

    nodes = summary.get("node_seconds") or {}
    if nodes:
        ordered = sorted(nodes.items(), key=lambda item: item[1].get("mean", 0.0))
        fig = Figure(figsize=(6, max(3, 0.4 * len(ordered) + 1)))
        ax = fig.subplots()
        ax.barh([n for n, _ in ordered], [v.get("mean", 0.0) for _, v in ordered])
        ax.set_xlabel("mean seconds per run of the node")
        ax.set_title("Time per node (aisearch)")
        save(fig, "node_seconds.png")
    return written
