"""The Markdown report of a QA run: ``report.md`` beside its records and ``summary.json``, with the
run's plots (``evals/report_plots.py``). Two runs side by side: ``evals/run_compare.py``."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.chain_summary import chain_lines
from evals.record_metrics import SYSTEM, ordered_systems
from evals.report_cells import DASH, config_lines, interval, num, table
from evals.report_plots import plots
from evals.run_records import load_run

log = logging.getLogger(__name__)

REPORT = "report.md"
POSITION_BIAS_P = 0.01
"""A judge whose A/B picks are this unlikely under a fair coin is reported as position-biased."""


def _outcome_row(label: str, summary: Mapping[str, Any], counts: str, key: str) -> list[str]:
    """One side-by-side row: W/T/L counts (``<counts>wins`` …), NWR ``key``, its interval and p."""
    return [
        label,
        *(str(summary.get(f"{counts}{outcome}", 0)) for outcome in ("wins", "ties", "losses")),
        num(summary.get(key)),
        interval(summary.get(f"{key}_ci")),
        num(summary.get(f"{key}_sign_p"), 4),
    ]


def _group_table(title: str, label: str, groups: Mapping[str, Any]) -> list[str]:
    """One "by …" section: each group's share of aisearch's questions, its accuracy next to RAG's
    on the same questions, NWR and latency."""
    total = sum(entry.get("n", 0) for entry in groups.values()) or 1
    rows = [
        [
            name,
            str(entry.get("n", 0)),
            num(entry.get("n", 0) / total),
            num(entry.get("em")),
            num(entry.get("f1")),
            num(entry.get("rag_em")),
            num(entry.get("rag_f1")),
            num(entry.get("nwr")),
            num(entry.get("latency_p50_s"), 1),
            num(entry.get("latency_p80_s"), 1),
        ]
        for name, entry in groups.items()
    ]
    header = [label, "n", "share", "EM", "F1", "RAG EM", "RAG F1", "NWR (F1)", "P50 s", "P80 s"]
    return [f"## {title}", "", *table(header, rows)]


def _question_table(title: str, label: str, groups: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """Questions grouped by a field of theirs: every system's EM / F1 and aisearch's NWR."""
    if not groups:
        return []
    header = [label, "n"] + [f"{name} EM / F1" for name in names] + ["NWR (F1)", "95% CI"]
    rows = []
    for group, entry in groups.items():
        n = max((entry[name]["n"] for name in names if name in entry), default=0)
        cells = [
            f"{num(entry[name]['em'])} / {num(entry[name]['f1'])}" if name in entry else DASH
            for name in names
        ]
        rows.append([group, str(n), *cells, num(entry.get("nwr")), interval(entry.get("nwr_ci"))])
    return [f"## {title}", "", *table(header, rows)]


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
            f"{num(picks.get('sign_p'), 4)})."
        )
        if (picks.get("sign_p") or 1.0) < POSITION_BIAS_P:
            line += (
                " **The judge is position-biased: its side-by-side verdicts say nothing about the answers.**"
            )
        lines += [line, ""]
    return lines


def markdown(summary: Mapping[str, Any], images: Sequence[str | Path] = ()) -> str:
    """Render the summary of a QA run as a Markdown report.

    Args:
        summary: the output of :func:`evals.summary.summarise` (or the run's ``summary.json``).
        images: plot files to embed at the end, linked by file name (they sit next to the report).

    Returns:
        The report text.
    """
    systems = summary.get("systems") or {}
    names = ordered_systems(summary.get("systems") or {})
    config = summary.get("config") or {}
    out = [f"# QA evaluation: {summary.get('n', 0)} questions", ""]
    out += config_lines(config)

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
    out += table(
        ["system"] + [label for _, label, _ in columns],
        [[name] + [num(systems[name].get(key), digits) for key, _, digits in columns] for name in names],
    )
    if summary.get("latency_ratio_p50") is not None:
        out += [f"Latency P50 of aisearch is {summary['latency_ratio_p50']:.2f}× the RAG baseline's.", ""]

    # Side by side.
    out += ["## aisearch vs RAG, side by side", ""]
    rows = [_outcome_row("F1 (per question)", summary, "", "nwr")]
    if summary.get("nwr_judge") is not None:
        rows.append(_outcome_row("judge (pairwise)", summary, "judge_", "nwr_judge"))
    out += table(["basis", "wins", "ties", "losses", "NWR", "95% CI", "sign-test p"], rows)
    out += _position_lines(summary.get("judge_position") or {})
    for key, stats in (summary.get("judge_pairwise") or {}).items():
        if key != f"{SYSTEM}_vs_rag":
            out += [
                f"Judge pairwise {key}: NWR {num(stats.get('nwr'))} {interval(stats.get('nwr_ci'))}, "
                f"W/T/L {stats.get('wins')}/{stats.get('ties')}/{stats.get('losses')}, "
                f"p = {num(stats.get('sign_p'), 4)}.",
                "",
            ]
    flips = summary.get("em_flips") or {}
    out += [
        f"NWR = (W − L) / (W + T + L) over {summary.get('paired_n', 0)} questions both systems answered "
        "(seed 001 Eq. 46); the interval is a 2000-replicate bootstrap over questions, p is the exact "
        "two-sided sign test with ties dropped.",
        "",
        f"EM: aisearch − RAG = {num(_diff(summary.get('em'), summary.get('baseline_em')))} "
        f"(95% CI {interval(summary.get('em_diff_ci'))}); questions right only for aisearch: "
        f"{flips.get('aisearch_only', 0)}, only for RAG: {flips.get('rag_only', 0)} "
        f"(sign test p = {num(summary.get('em_sign_p'), 4)}).",
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
            f"Re-plan rate: {num(summary.get('replan_rate'))} of aisearch questions re-planned at least once.",
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
        out += table(
            ["node", "runs", "mean s", "P50 s", "P80 s"],
            [
                [
                    node,
                    str(v.get("n", DASH)),
                    num(v.get("mean"), 2),
                    num(v.get("p50"), 2),
                    num(v.get("p80"), 2),
                ]
                for node, v in ordered
            ],
        )

    # Tokens.
    tokens = summary.get("tokens") or {}
    token_rows = [
        [name, role, str(v.get("n", DASH)), num(v.get("prompt_mean"), 0), num(v.get("completion_mean"), 0)]
        for name in names
        for role, v in (tokens.get(name) or {}).items()
    ]
    if token_rows:
        out += ["## Tokens per role (means over the questions that used the role; total: per question)", ""]
        out += table(["system", "role", "questions", "prompt", "completion"], token_rows)
    strategy_rows = [
        [key, role, str(v.get("n", DASH)), num(v.get("prompt_mean"), 0), num(v.get("completion_mean"), 0)]
        for key, roles in (summary.get("tokens_by_strategy") or {}).items()
        for role, v in roles.items()
    ]
    if strategy_rows:
        out += ["## aisearch tokens per role, by route and strategy", ""]
        out += table(["route/strategy", "role", "questions", "prompt", "completion"], strategy_rows)

    # Judge agreement.
    judge_agreement = summary.get("judge_agreement") or {}
    if judge_agreement:
        kappa = summary.get("judge_kappa") or {}
        out += ["## Judge agreement with exact match", ""]
        out += ['Share of questions where the judge\'s "correct" (2) coincides with EM = 1.', ""]
        out += table(
            ["system", "agreement", "Cohen's κ"],
            [[name, num(value), num(kappa.get(name))] for name, value in judge_agreement.items()],
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
    records, summary = load_run(run)
    images = plots(records, summary, run)
    path = run / REPORT
    path.write_text(markdown(summary, images=images), encoding="utf-8")
    log.info("wrote %s with %d plots", path, len(images))
    return path
