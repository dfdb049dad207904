"""The summary of a CQED run (``cqed.jsonl``, see :mod:`evals.cqed`).

Scores count only on queries the judge rated completely (all four criteria for all three models),
so every system is averaged over the same queries and the side by side is paired::

    {"n", "judged", "parse_failures", "parse_failure_rate", "repaired", "judge_errors",
     "with_example",
     "systems": {name: {"criteria": {criterion: {"mean", "ci"}}, "total": {"mean", "ci"},
                        "latency_p50_s", "errors"}},
     "aisearch_vs_rag": {"wins", "ties", "losses", "n", "nwr", "nwr_ci", "sign_p",
                         "total_diff", "total_diff_ci"},
     "order_bias": {"1" | "2" | "3": {"n", "total", criterion: mean}}}

``total`` is the sum of the four scores (0-20): win/tie/lose of aisearch against RAG is decided on
it (NWR, seed 001 Eq. 46). Intervals are 95 % percentile bootstraps (2,000 replicates, seed 0);
``order_bias`` is the judge's mean score by the place an answer was shown in, whatever system it
was (a fair judge gives the three places about the same mean, since the order is shuffled).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from evals.cqed_parse import CRITERIA, POSITIONS
from evals.metrics import win_tie_lose
from evals.stats import (
    bootstrap_mean_ci,
    bootstrap_mean_diff_ci,
    bootstrap_nwr_ci,
    mean,
    nwr,
    percentile,
    sign_test,
)

SYSTEMS = ("aisearch", "rag", "closed_book")
RECORDS = "cqed.jsonl"  # a run's per-query records, in its run directory
SYSTEM, BASELINE = "aisearch", "rag"


def total(scores: Mapping[str, float]) -> float:
    """The sum of the four criteria (0-20)."""
    return float(sum(scores.get(name, 0.0) for name in CRITERIA))


def _estimate(values: Sequence[float]) -> dict[str, Any]:
    return {"mean": round(mean(values), 4), "ci": [round(x, 4) for x in bootstrap_mean_ci(values)]}


def _judged(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Records whose judge call gave every score of every system."""
    return [
        r
        for r in records
        if (r.get("judge") or {}).get("complete")
        and all(set(CRITERIA) <= set((r.get("scores") or {}).get(name, {})) for name in r.get("order", []))
    ]


def _system_stats(
    records: Sequence[Mapping[str, Any]], judged: Sequence[Mapping[str, Any]], name: str
) -> dict[str, Any]:
    outputs = [r["systems"][name] for r in records if name in (r.get("systems") or {})]
    latencies = [float(o["latency_s"]) for o in outputs if isinstance(o.get("latency_s"), int | float)]
    scored = [r["scores"][name] for r in judged if name in r["scores"]]
    return {
        "n": len(scored),
        "criteria": {c: _estimate([float(s[c]) for s in scored]) for c in CRITERIA},
        "total": _estimate([total(s) for s in scored]),
        "latency_p50_s": round(percentile(latencies, 50), 3) if latencies else None,
        "errors": sum(1 for o in outputs if o.get("error")),
    }


def side_by_side(
    judged: Sequence[Mapping[str, Any]], system: str = SYSTEM, baseline: str = BASELINE
) -> dict[str, Any]:
    """Win/tie/lose of ``system`` against ``baseline`` on the total score, with NWR, its interval,
    the sign test, and the paired mean difference of the totals with its interval."""
    pairs = [(total(r["scores"][system]), total(r["scores"][baseline])) for r in judged]
    outcomes = [win_tie_lose(a, b) for a, b in pairs]
    counts = Counter(outcomes)
    a_totals, b_totals = [a for a, _ in pairs], [b for _, b in pairs]
    return {
        "wins": counts["win"],
        "ties": counts["tie"],
        "losses": counts["lose"],
        "n": len(outcomes),
        "nwr": round(nwr(outcomes), 4),
        "nwr_ci": [round(x, 4) for x in bootstrap_nwr_ci(outcomes)],
        "sign_p": round(sign_test(counts["win"], counts["lose"]), 4),
        "total_diff": round(mean(a_totals) - mean(b_totals), 4),
        "total_diff_ci": [round(x, 4) for x in bootstrap_mean_diff_ci(a_totals, b_totals)],
    }


def order_bias(judged: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The judge's mean scores by the place (Model 1, 2, 3) an answer was shown in."""
    by_place: dict[str, dict[str, Any]] = {}
    for position in POSITIONS:
        shown = [r["scores"][r["order"][position - 1]] for r in judged]
        entry: dict[str, Any] = {"n": len(shown), "total": round(mean([total(s) for s in shown]), 4)}
        entry.update({c: round(mean([float(s[c]) for s in shown]), 4) for c in CRITERIA})
        by_place[str(position)] = entry
    return by_place


def summarise_cqed(
    records: Sequence[Mapping[str, Any]], config: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The run's summary (see the module docstring) from its per-query records.

    Args:
        records: the ``cqed.jsonl`` records of the run's queries.
        config: the run's options, versions and machine, copied into the summary.
    """
    judged = _judged(records)
    judges = [r.get("judge") or {} for r in records]
    n = len(records)
    return {
        "config": dict(config or {}),
        "n": n,
        "judged": len(judged),
        "parse_failures": n - len(judged),
        "parse_failure_rate": round((n - len(judged)) / n, 4) if n else 0.0,
        "repaired": sum(1 for j in judges if j.get("repaired")),
        "repaired_complete": sum(1 for j in judges if j.get("repaired") and j.get("complete")),
        "judge_errors": sum(1 for j in judges if j.get("error")),
        "with_example": sum(1 for j in judges if j.get("with_example")),
        "judge_seconds_p50": round(percentile([float(j.get("seconds") or 0) for j in judges], 50), 3),
        "systems": {name: _system_stats(records, judged, name) for name in SYSTEMS},
        "aisearch_vs_rag": side_by_side(judged),
        "order_bias": order_bias(judged),
    }
