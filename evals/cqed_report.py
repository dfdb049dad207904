"""The Markdown report of a CQED run (``report.md`` next to ``cqed.jsonl`` and ``summary.json``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evals.cqed_parse import CRITERIA
from evals.cqed_summary import RECORDS, SYSTEMS, summarise_cqed
from evals.report_cells import config_lines, interval, num, table
from evals.run_records import load_records

REPORT = "report.md"
NAMES = {"aisearch": "aisearch", "rag": "RAG (same model)", "closed_book": "closed-book"}


def _estimate(entry: Mapping[str, Any]) -> str:
    low, high = entry.get("ci") or (None, None)
    if low is None:
        return num(entry.get("mean"), 2)
    return f"{num(entry.get('mean'), 2)} [{low:.2f}, {high:.2f}]"


def markdown(summary: Mapping[str, Any]) -> str:
    """Render a CQED summary (:func:`evals.cqed_summary.summarise_cqed`) as Markdown."""
    config = dict(summary.get("config") or {})
    keep = ("command", "date", "data", "n", "offset", "seed", "index", "judge_model", "judge_base_url")
    lines = ["# CQED: aisearch vs same-model RAG and closed-book, SRSA's judge", ""]
    lines += config_lines({k: config[k] for k in keep if config.get(k) not in (None, "")})
    if config.get("machine"):
        lines += [f"- **machine**: {json.dumps(config['machine'])}", ""]
    n, judged = summary.get("n", 0), summary.get("judged", 0)
    lines += [
        f"{n} queries; {judged} rated completely by the judge (all four scores of all three answers);"
        f" the scores below are over those {judged}. Parse failures: {summary.get('parse_failures', 0)}"
        f" ({num(summary.get('parse_failure_rate'), 3)}), of which judge errors "
        f"{summary.get('judge_errors', 0)}; repair turns {summary.get('repaired', 0)} "
        f"({summary.get('repaired_complete', 0)} of them completed the rating). SRSA's worked example "
        f"was in the judge's prompt for {summary.get('with_example', 0)} of {n} queries (it goes in "
        f"only when it fits the judge's context). Judge P50 {num(summary.get('judge_seconds_p50'), 1)} s.",
        "",
        "## Scores (0-5, mean and 95 % bootstrap interval)",
        "",
    ]
    systems = summary.get("systems") or {}
    header = ["system", "n", *CRITERIA, "total (0-20)", "P50 s", "errors"]
    rows = []
    for name in SYSTEMS:
        entry = systems.get(name) or {}
        criteria = entry.get("criteria") or {}
        rows.append(
            [
                NAMES.get(name, name),
                str(entry.get("n", 0)),
                *(_estimate(criteria.get(c) or {}) for c in CRITERIA),
                _estimate(entry.get("total") or {}),
                num(entry.get("latency_p50_s"), 1),
                str(entry.get("errors", 0)),
            ]
        )
    lines += table(header, rows)
    duel = summary.get("aisearch_vs_rag") or {}
    lines += ["## aisearch vs RAG, side by side on the total score", ""]
    lines += table(
        ["W", "T", "L", "NWR", "95% CI", "sign test p", "total diff", "95% CI"],
        [
            [
                str(duel.get("wins", 0)),
                str(duel.get("ties", 0)),
                str(duel.get("losses", 0)),
                num(duel.get("nwr")),
                interval(duel.get("nwr_ci")),
                num(duel.get("sign_p"), 4),
                num(duel.get("total_diff"), 2),
                interval(duel.get("total_diff_ci")),
            ]
        ],
    )
    bias = summary.get("order_bias") or {}
    lines += [
        "## The judge's order bias: mean score by the place an answer was shown in",
        "",
        "The order is shuffled per query, so an unbiased judge gives the three places about the same mean.",
        "",
    ]
    lines += table(
        ["shown as", "n", "total (0-20)", *CRITERIA],
        [
            [
                f"Model {place}",
                str((bias.get(place) or {}).get("n", 0)),
                num((bias.get(place) or {}).get("total"), 2),
                *(num((bias.get(place) or {}).get(c), 2) for c in CRITERIA),
            ]
            for place in ("1", "2", "3")
        ],
    )
    return "\n".join(lines)


def write_report(run_dir: str | Path, summary: Mapping[str, Any] | None = None) -> Path:
    """Write ``report.md`` in ``run_dir`` (from ``summary``, or summarised again from the records).

    Returns:
        The report's path.
    """
    run_dir = Path(run_dir)
    if summary is None:
        config_path = run_dir / "config.json"
        config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
        summary = summarise_cqed(load_records(run_dir / RECORDS), config)
    path = run_dir / REPORT
    path.write_text(markdown(summary) + "\n", encoding="utf-8")
    return path
