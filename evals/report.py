"""Markdown report and plots for a QA run directory, and a side-by-side comparison of two runs.

A run directory holds ``questions.jsonl`` (one record per question, see :mod:`evals.summary`) and
``summary.json``. :func:`write_report` renders ``report.md`` next to them with PNG plots
(matplotlib, Agg backend: no display needed); :func:`compare` tells what changed between two runs.

Kept in one file (over 500 lines): the report's sections, its plots and the run comparison read the
same summary and records and share their formatting.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.chain_summary import chain_lines
from evals.summary import SYSTEM, SYSTEM_ORDER, load_run_records, record_metrics, summarise

log = logging.getLogger(__name__)

SUMMARY = "summary.json"
REPORT = "report.md"
DASH = "–"
CONFIG_FIRST = ("command", "machine", "date")
COMPARE_METRICS = (
    "em",
    "f1",
    "cover",
    "evidence_title_recall",
    "citation_precision",
    "citation_recall",
    "judge_correctness",
    "judge_faithfulness",
    "latency_p50_s",
    "latency_p80_s",
    "errors",
)


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _delta(a: Any, b: Any, digits: int = 3) -> str:
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return DASH
    return f"{b - a:+.{digits}f}" if isinstance(a, float) or isinstance(b, float) else f"{b - a:+d}"


def _ci(interval: Sequence[float] | None) -> str:
    if not interval or len(interval) != 2:
        return DASH
    return f"[{interval[0]:+.3f}, {interval[1]:+.3f}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]


def _systems(summary: Mapping[str, Any]) -> list[str]:
    names = list(summary.get("systems") or {})
    return [s for s in SYSTEM_ORDER if s in names] + [s for s in names if s not in SYSTEM_ORDER]


def _config_lines(config: Mapping[str, Any]) -> list[str]:
    if not config:
        return ["_No run configuration recorded._", ""]
    keys = [k for k in CONFIG_FIRST if k in config] + sorted(k for k in config if k not in CONFIG_FIRST)
    lines = []
    for key in keys:
        value = config[key]
        text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)
        lines.append(f"- **{key}**: `{text}`" if key == "command" else f"- **{key}**: {text}")
    return lines + [""]


def _outcome_row(label: str, summary: Mapping[str, Any], counts: str, key: str) -> list[str]:
    """One side-by-side row: W/T/L counts (``<counts>wins`` …), NWR ``key``, its interval and p."""
    return [
        label,
        *(str(summary.get(f"{counts}{outcome}", 0)) for outcome in ("wins", "ties", "losses")),
        _num(summary.get(key)),
        _ci(summary.get(f"{key}_ci")),
        _num(summary.get(f"{key}_sign_p"), 4),
    ]


def _group_table(title: str, label: str, groups: Mapping[str, Any]) -> list[str]:
    """One "by …" section: each group's share of aisearch's questions, its accuracy next to RAG's
    on the same questions, NWR and latency."""
    total = sum(entry.get("n", 0) for entry in groups.values()) or 1
    rows = [
        [
            name,
            str(entry.get("n", 0)),
            _num(entry.get("n", 0) / total),
            _num(entry.get("em")),
            _num(entry.get("f1")),
            _num(entry.get("rag_em")),
            _num(entry.get("rag_f1")),
            _num(entry.get("nwr")),
            _num(entry.get("latency_p50_s"), 1),
            _num(entry.get("latency_p80_s"), 1),
        ]
        for name, entry in groups.items()
    ]
    header = [label, "n", "share", "EM", "F1", "RAG EM", "RAG F1", "NWR (F1)", "P50 s", "P80 s"]
    return [f"## {title}", "", *_table(header, rows)]


def _question_table(title: str, label: str, groups: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """Questions grouped by a field of theirs: every system's EM / F1 and aisearch's NWR."""
    if not groups:
        return []
    header = [label, "n"] + [f"{name} EM / F1" for name in names] + ["NWR (F1)", "95% CI"]
    rows = []
    for group, entry in groups.items():
        n = max((entry[name]["n"] for name in names if name in entry), default=0)
        cells = [
            f"{_num(entry[name]['em'])} / {_num(entry[name]['f1'])}" if name in entry else DASH
            for name in names
        ]
        rows.append([group, str(n), *cells, _num(entry.get("nwr")), _ci(entry.get("nwr_ci"))])
    return [f"## {title}", "", *_table(header, rows)]


def markdown(summary: Mapping[str, Any], images: Sequence[str | Path] = ()) -> str:
    """Render the summary of a QA run as a Markdown report.

    Args:
        summary: the output of :func:`evals.summary.summarise` (or the run's ``summary.json``).
        images: plot files to embed at the end, linked by file name (they sit next to the report).

    Returns:
        The report text.
    """
    systems = summary.get("systems") or {}
    names = _systems(summary)
    config = summary.get("config") or {}
    out = [f"# QA evaluation: {summary.get('n', 0)} questions", ""]
    out += _config_lines(config)

    # Headline table: only the columns some system has values for.
    columns = [
        ("n", "n", 0),
        ("em", "EM", 3),
        ("f1", "F1", 3),
        ("cover", "cover", 3),
        ("evidence_title_recall", "evidence title recall", 3),
        ("answer_in_evidence", "gold in evidence", 3),
        ("citation_title_recall", "citation title recall", 3),
        ("citation_precision", "citation precision", 3),
        ("citation_recall", "citation recall", 3),
        ("judge_correctness", "judge correctness (0-2)", 2),
        ("judge_faithfulness", "judge faithfulness (0-2)", 2),
        ("latency_p50_s", "P50 s", 1),
        ("latency_p80_s", "P80 s", 1),
        ("errors", "errors", 0),
    ]
    columns = [c for c in columns if any(systems[s].get(c[0]) is not None for s in names)]
    out += ["## Headline", ""]
    out += _table(
        ["system"] + [label for _, label, _ in columns],
        [[name] + [_num(systems[name].get(key), digits) for key, _, digits in columns] for name in names],
    )
    if summary.get("latency_ratio_p50") is not None:
        out += [f"Latency P50 of aisearch is {summary['latency_ratio_p50']:.2f}× the RAG baseline's.", ""]

    # Side by side.
    out += ["## aisearch vs RAG, side by side", ""]
    rows = [_outcome_row("F1 (per question)", summary, "", "nwr")]
    if summary.get("nwr_judge") is not None:
        rows.append(_outcome_row("judge (pairwise)", summary, "judge_", "nwr_judge"))
    out += _table(["basis", "wins", "ties", "losses", "NWR", "95% CI", "sign-test p"], rows)
    out += _position_lines(summary.get("judge_position") or {})
    for key, stats in (summary.get("judge_pairwise") or {}).items():
        if key != f"{SYSTEM}_vs_rag":
            out += [
                f"Judge pairwise {key}: NWR {_num(stats.get('nwr'))} {_ci(stats.get('nwr_ci'))}, "
                f"W/T/L {stats.get('wins')}/{stats.get('ties')}/{stats.get('losses')}, "
                f"p = {_num(stats.get('sign_p'), 4)}.",
                "",
            ]
    flips = summary.get("em_flips") or {}
    out += [
        f"NWR = (W − L) / (W + T + L) over {summary.get('paired_n', 0)} questions both systems answered "
        "(seed 001 Eq. 46); the interval is a 2000-replicate bootstrap over questions, p is the exact "
        "two-sided sign test with ties dropped.",
        "",
        f"EM: aisearch − RAG = {_num(_diff(summary.get('em'), summary.get('baseline_em')))} "
        f"(95% CI {_ci(summary.get('em_diff_ci'))}); questions right only for aisearch: "
        f"{flips.get('aisearch_only', 0)}, only for RAG: {flips.get('rag_only', 0)} "
        f"(sign test p = {_num(summary.get('em_sign_p'), 4)}).",
        "",
    ]

    # By question type, and by split (the tuning part beside the held-out part).
    for title, label, key in (
        ("By question type", "type", "by_type"),
        ("By split (tuning / held out)", "split", "by_split"),
    ):
        out += _question_table(title, label, summary.get(key) or {}, names)

    # By route, by strategy, by what decided the route.
    by_route = summary.get("by_route") or {}
    if by_route:
        out += _group_table("By route (the Master's choice)", "route", by_route)
        out += [
            f"Re-plan rate: {_num(summary.get('replan_rate'))} of aisearch questions re-planned at least once.",
            "",
        ]
    if summary.get("by_strategy"):
        out += _group_table("By route and SRSA strategy", "route/strategy", summary["by_strategy"])
    if summary.get("by_comparison"):
        out += _group_table(
            "By how the Writer read it (a comparison entity by entity, settled in code or left open; else whole)",
            "reading",
            summary["by_comparison"],
        )
    if summary.get("by_chain"):
        out += _group_table(
            "By hop chain (split, searched and answered hop by hop)", "chain", summary["by_chain"]
        )
    out += chain_lines(summary.get("chain_breaks") or {})
    if summary.get("by_decider"):
        out += _group_table(
            "By what decided the route (rules, classifier, probe: no LLM call; llm: the Master's assessment)",
            "decided by",
            summary["by_decider"],
        )

    # Time per node.
    nodes = summary.get("node_seconds") or {}
    if nodes:
        out += ["## Time per node (aisearch)", ""]
        ordered = sorted(nodes.items(), key=lambda item: -item[1].get("mean", 0.0))
        out += _table(
            ["node", "runs", "mean s", "P50 s", "P80 s"],
            [
                [
                    node,
                    str(v.get("n", DASH)),
                    _num(v.get("mean"), 2),
                    _num(v.get("p50"), 2),
                    _num(v.get("p80"), 2),
                ]
                for node, v in ordered
            ],
        )

    # Tokens.
    tokens = summary.get("tokens") or {}
    token_rows = [
        [name, role, str(v.get("n", DASH)), _num(v.get("prompt_mean"), 0), _num(v.get("completion_mean"), 0)]
        for name in names
        for role, v in (tokens.get(name) or {}).items()
    ]
    if token_rows:
        out += ["## Tokens per role (means over the questions that used the role; total: per question)", ""]
        out += _table(["system", "role", "questions", "prompt", "completion"], token_rows)
    strategy_rows = [
        [key, role, str(v.get("n", DASH)), _num(v.get("prompt_mean"), 0), _num(v.get("completion_mean"), 0)]
        for key, roles in (summary.get("tokens_by_strategy") or {}).items()
        for role, v in roles.items()
    ]
    if strategy_rows:
        out += ["## aisearch tokens per role, by route and strategy", ""]
        out += _table(["route/strategy", "role", "questions", "prompt", "completion"], strategy_rows)

    # Judge agreement.
    judge_agreement = summary.get("judge_agreement") or {}
    if judge_agreement:
        kappa = summary.get("judge_kappa") or {}
        out += ["## Judge agreement with exact match", ""]
        out += ['Share of questions where the judge\'s "correct" (2) coincides with EM = 1.', ""]
        out += _table(
            ["system", "agreement", "Cohen's κ"],
            [[name, _num(value), _num(kappa.get(name))] for name, value in judge_agreement.items()],
        )

    # Errors.
    by_system = summary.get("errors_by_system") or {}
    out += ["## Errors", ""]
    detail = ", ".join(f"{name} {count}" for name, count in by_system.items())
    out += [
        f"{summary.get('errors', 0)} questions with an aisearch or RAG error"
        + (f" ({detail})." if detail else "."),
        "",
    ]

    if images:
        out += ["## Plots", ""]
        for image in images:
            name = Path(image).name
            out += [f"![{Path(name).stem.replace('_', ' ')}]({name})", ""]
    return "\n".join(out).rstrip() + "\n"


def _diff(a: Any, b: Any) -> float | None:
    return a - b if isinstance(a, int | float) and isinstance(b, int | float) else None


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
    names = _systems(summary)
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


def _load_run(run_dir: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    run = Path(run_dir)
    records = load_run_records(run)
    path = run / SUMMARY
    if path.exists():
        try:
            return records, json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            log.warning("%s is not valid JSON (%s); recomputing the summary from the records", path, exc)
    return records, summarise(records, {})


POSITION_BIAS_P = 0.01
"""A judge whose A/B picks are this unlikely under a fair coin is reported as position-biased."""


def _position_lines(position: dict[str, dict[str, Any]]) -> list[str]:
    """One line per pairwise comparison: how often the judge picked the answer shown first."""
    lines = []
    for key, picks in position.items():
        decided = picks.get("A", 0) + picks.get("B", 0)
        if not decided:
            continue
        line = (
            f"Judge position check ({key}): the answer shown first (A) was picked in {picks['A']} of "
            f"{decided} decided pairs (the order is a coin flip per question; sign test p = "
            f"{_num(picks.get('sign_p'), 4)})."
        )
        if (picks.get("sign_p") or 1.0) < POSITION_BIAS_P:
            line += (
                " **The judge is position-biased: its side-by-side verdicts say nothing about the answers.**"
            )
        lines += [line, ""]
    return lines


def write_report(run_dir: str | Path) -> Path:
    """Write ``report.md`` and its PNG plots into a run directory.

    Reads ``questions.jsonl`` and ``summary.json``; when the summary is missing (a run that was
    interrupted) it is recomputed from the records with an empty config.

    Args:
        run_dir: the run directory.

    Returns:
        The path of ``report.md``.
    """
    run = Path(run_dir)
    records, summary = _load_run(run)
    images = plots(records, summary, run)
    path = run / REPORT
    path.write_text(markdown(summary, images=images), encoding="utf-8")
    log.info("wrote %s with %d plots", path, len(images))
    return path


def compare(run_a: str | Path, run_b: str | Path) -> str:
    """Compare two runs side by side: headline metrics per system, deltas, and aisearch EM flips.

    Args:
        run_a: the earlier (reference) run directory.
        run_b: the later run directory; deltas are ``b - a``.

    Returns:
        Markdown text.
    """
    records_a, summary_a = _load_run(run_a)
    records_b, summary_b = _load_run(run_b)
    label_a, label_b = Path(run_a).name or str(run_a), Path(run_b).name or str(run_b)
    out = [f"# Comparison: {label_a} → {label_b}", ""]
    out += _table(
        ["", "run", "questions", "date"],
        [
            [
                "A",
                label_a,
                str(summary_a.get("n", 0)),
                str((summary_a.get("config") or {}).get("date", DASH)),
            ],
            [
                "B",
                label_b,
                str(summary_b.get("n", 0)),
                str((summary_b.get("config") or {}).get("date", DASH)),
            ],
        ],
    )

    systems_a, systems_b = summary_a.get("systems") or {}, summary_b.get("systems") or {}
    names = _systems({"systems": {**systems_a, **systems_b}})
    rows = []
    for name in names:
        a, b = systems_a.get(name) or {}, systems_b.get(name) or {}
        for metric in COMPARE_METRICS:
            if a.get(metric) is None and b.get(metric) is None:
                continue
            rows.append(
                [name, metric, _num(a.get(metric)), _num(b.get(metric)), _delta(a.get(metric), b.get(metric))]
            )
    for key in ("nwr", "nwr_judge", "replan_rate", "latency_ratio_p50"):
        if summary_a.get(key) is not None or summary_b.get(key) is not None:
            who = "aisearch vs RAG" if key.startswith("nwr") else SYSTEM
            a, b = summary_a.get(key), summary_b.get(key)
            rows.append([who, key, _num(a), _num(b), _delta(a, b)])
    out += ["## Headline metrics", ""]
    out += _table(["system", "metric", "A", "B", "Δ (B − A)"], rows)

    # Per-question EM flips of aisearch, on the questions both runs answered.
    em_a = {str(r.get("id")): record_metrics(r, SYSTEM)["em"] for r in records_a}
    em_b = {str(r.get("id")): record_metrics(r, SYSTEM)["em"] for r in records_b}
    common = [i for i in em_a if i in em_b and em_a[i] is not None and em_b[i] is not None]
    fixed = [i for i in common if em_a[i] < em_b[i]]
    broken = [i for i in common if em_a[i] > em_b[i]]
    out += ["## aisearch exact-match flips", ""]
    out += [
        f"On {len(common)} questions in both runs: **{len(fixed)} fixed** (wrong in A, right in B), "
        f"**{len(broken)} broken** (right in A, wrong in B), net {len(fixed) - len(broken):+d}.",
        "",
    ]
    for title, ids in (("Fixed", fixed), ("Broken", broken)):
        if ids:
            shown = ", ".join(f"`{i}`" for i in ids[:20]) + (
                f" … (+{len(ids) - 20})" if len(ids) > 20 else ""
            )
            out += [f"- {title}: {shown}"]
    return "\n".join(out).rstrip() + "\n"
