"""Aggregate per-question QA records (``questions.jsonl``, see ``evals/record_metrics.py``) into the
run's summary JSON.

``summarise`` computes the aggregate numbers (the team's JSON contract: ``n, em, f1, cover,
baseline_em, baseline_f1, baseline_cover, nwr, route_counts, errors, latency_p50_s,
baseline_latency_p50_s`` and more), with ``aisearch`` as the system under test and ``rag`` as the
baseline; the breakdowns it adds are ``evals/breakdowns.py``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from evals.breakdowns import (
    by_question,
    compared_reading,
    defined_mean,
    grouped_by_output,
    judge_position,
    judge_score,
    latency_seconds,
    node_stats,
    outcome_stats,
    token_stats,
)
from evals.chain_summary import chain_breaks, chain_kind
from evals.metrics import win_tie_lose
from evals.qa_data import split_of
from evals.record_metrics import (
    BASELINE,
    METRICS,
    SYSTEM,
    ordered_systems,
    record_metrics,
    scored_value,
    system_output,
)
from evals.stats import agreement, bootstrap_mean_diff_ci, cohen_kappa, mean, percentile, sign_test

PAIRWISE_KEY = f"{SYSTEM}_vs_{BASELINE}"


def summarise(
    records: Sequence[Mapping[str, Any]], config: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Aggregate per-question records into the summary JSON of a QA run.

    Args:
        records: per-question records (``evals/record_metrics.py``), e.g. from ``evals.run_records.load_records``.
        config: the run's configuration (command, machine, date, models, ...), copied as is.

    Returns:
        The summary: headline numbers for ``aisearch`` (``em``, ``f1``, ``cover``, latencies) and
        the ``rag`` baseline (``baseline_*``), F1-based side-by-side (``nwr``, ``nwr_ci``,
        ``nwr_sign_p``, ``wins``/``ties``/``losses``), paired EM comparison (``em_diff_ci``,
        ``em_sign_p``), judge-based NWR when the judge ran, and breakdowns ``systems``,
        ``by_type``, ``by_route``, ``route_counts``, ``replan_rate``, ``node_seconds``, ``tokens``,
        ``judge_agreement``, ``errors``/``errors_by_system``.
    """
    names = ordered_systems(name for r in records for name in (r.get("systems") or {}))
    scored: list[dict[str, dict[str, float | None]]] = [
        {name: record_metrics(r, name) for name in names if system_output(r, name) is not None}
        for r in records
    ]

    systems: dict[str, dict[str, Any]] = {}
    errors_by_system: dict[str, int] = {}
    for name in names:
        present = [(r, s[name]) for r, s in zip(records, scored, strict=True) if name in s]
        outputs = [system_output(r, name) or {} for r, _ in present]
        latency = latency_seconds(outputs)
        errors_by_system[name] = sum(o.get("error") is not None for o in outputs)
        entry: dict[str, Any] = {"n": len(present)}
        for metric in METRICS:
            entry[metric] = defined_mean(m[metric] for _, m in present)
        entry["judge_correctness"] = defined_mean(judge_score(r, name, "correctness") for r, _ in present)
        entry["judge_faithfulness"] = defined_mean(judge_score(r, name, "faithfulness") for r, _ in present)
        entry["latency_p50_s"] = percentile(latency, 50) if latency else None
        entry["latency_p80_s"] = percentile(latency, 80) if latency else None
        entry["errors"] = errors_by_system[name]
        systems[name] = entry

    def headline(name: str, key: str) -> Any:
        return systems[name][key] if name in systems else None

    # Side by side: aisearch against rag on the questions both answered (an error scores 0).
    paired = [
        (r, s[SYSTEM], s[BASELINE])
        for r, s in zip(records, scored, strict=True)
        if SYSTEM in s and BASELINE in s
    ]
    f1_outcomes = [win_tie_lose(scored_value(a["f1"]), scored_value(b["f1"])) for _, a, b in paired]
    f1_stats = outcome_stats(f1_outcomes)
    em_a = [scored_value(a["em"]) for _, a, _ in paired]
    em_b = [scored_value(b["em"]) for _, _, b in paired]
    em_fixed = sum(a > b for a, b in zip(em_a, em_b, strict=True))
    em_broken = sum(b > a for a, b in zip(em_a, em_b, strict=True))

    our_outputs = [o for r in records if (o := system_output(r, SYSTEM)) is not None]
    a_latency, b_latency = headline(SYSTEM, "latency_p50_s"), headline(BASELINE, "latency_p50_s")

    summary: dict[str, Any] = {
        "n": len(records),
        "em": headline(SYSTEM, "em"),
        "f1": headline(SYSTEM, "f1"),
        "cover": headline(SYSTEM, "cover"),
        "baseline_em": headline(BASELINE, "em"),
        "baseline_f1": headline(BASELINE, "f1"),
        "baseline_cover": headline(BASELINE, "cover"),
        "nwr": f1_stats["nwr"],
        "nwr_ci": f1_stats["nwr_ci"],
        "nwr_sign_p": f1_stats["sign_p"],
        "wins": f1_stats["wins"],
        "ties": f1_stats["ties"],
        "losses": f1_stats["losses"],
        "paired_n": len(paired),
        "em_diff_ci": list(bootstrap_mean_diff_ci(em_a, em_b)),
        "em_sign_p": sign_test(em_fixed, em_broken),
        "em_flips": {"aisearch_only": em_fixed, "rag_only": em_broken},
        "latency_p50_s": a_latency,
        "latency_p80_s": headline(SYSTEM, "latency_p80_s"),
        "baseline_latency_p50_s": b_latency,
        "baseline_latency_p80_s": headline(BASELINE, "latency_p80_s"),
        "latency_ratio_p50": a_latency / b_latency if a_latency is not None and b_latency else None,
        "errors": sum(
            any((system_output(r, name) or {}).get("error") is not None for name in (SYSTEM, BASELINE))
            for r in records
        ),
        "errors_by_system": errors_by_system,
        "systems": systems,
    }

    # Judge: pairwise NWR per comparison, and how often "correct" (2) agrees with EM.
    pairwise: dict[str, list[str]] = defaultdict(list)
    for record in records:
        for key, verdict in ((record.get("judge") or {}).get("pairwise") or {}).items():
            if verdict in ("win", "tie", "lose"):
                pairwise[key].append(verdict)
    summary["judge_pairwise"] = {key: outcome_stats(v) for key, v in sorted(pairwise.items())}
    position = judge_position(records)
    if position:
        summary["judge_position"] = position
    if PAIRWISE_KEY in pairwise:
        judged = summary["judge_pairwise"][PAIRWISE_KEY]
        summary |= {
            "nwr_judge": judged["nwr"],
            "nwr_judge_ci": judged["nwr_ci"],
            "nwr_judge_sign_p": judged["sign_p"],
            "judge_wins": judged["wins"],
            "judge_ties": judged["ties"],
            "judge_losses": judged["losses"],
        }
    agreement_by_system, kappa_by_system = {}, {}
    for name in names:
        pairs = [
            (c == 2.0, m[name]["em"] == 1.0)
            for r, m in zip(records, scored, strict=True)
            if name in m and (c := judge_score(r, name, "correctness")) is not None
        ]
        if pairs:
            judge_labels, em_labels = [p[0] for p in pairs], [p[1] for p in pairs]
            agreement_by_system[name] = agreement(judge_labels, em_labels)
            kappa_by_system[name] = cohen_kappa(judge_labels, em_labels)
    if agreement_by_system:
        summary["judge_agreement"] = agreement_by_system
        summary["judge_kappa"] = kappa_by_system

    # By question type and by split (tuning / held out): every system's EM/F1, and aisearch's NWR.
    summary["by_type"] = by_question(records, scored, names, lambda r: str(r.get("type") or "unknown"))
    summary["by_split"] = by_question(records, scored, names, lambda r: split_of(str(r.get("id", ""))))
    summary["by_chain"] = grouped_by_output(records, scored, chain_kind)
    summary["chain_breaks"] = chain_breaks(records)

    # By route (the Master's choice for aisearch), by strategy and by what decided the route, with
    # rag on the same questions for reference.
    by_route = grouped_by_output(records, scored, lambda output: output.get("route"))
    summary["by_route"] = by_route
    summary["by_strategy"] = grouped_by_output(
        records, scored, lambda output: f"{output.get('route')}/{output.get('strategy') or '-'}"
    )
    summary["by_comparison"] = grouped_by_output(records, scored, compared_reading)
    summary["by_decider"] = grouped_by_output(
        records, scored, lambda output: output.get("decided_by") or "llm"
    )
    summary["route_counts"] = {route: entry["n"] for route, entry in by_route.items()}
    summary["route_share"] = {route: n / len(our_outputs) for route, n in summary["route_counts"].items()}
    summary["replan_rate"] = (
        mean([float((o.get("replans") or 0) > 0) for o in our_outputs]) if our_outputs else None
    )

    summary["node_seconds"] = node_stats(our_outputs)
    summary["node_seconds_by_system"] = {
        name: node_stats(system_output(r, name) or {} for r in records if system_output(r, name) is not None)
        for name in names
    }
    summary["tokens"] = {
        name: token_stats(
            [system_output(r, name) or {} for r in records if system_output(r, name) is not None]
        )
        for name in names
    }
    by_strategy: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for output in our_outputs:
        if output.get("error") is None:
            by_strategy[f"{output.get('route')}/{output.get('strategy') or '-'}"].append(output)
    summary["tokens_by_strategy"] = {
        key: token_stats(outputs) for key, outputs in sorted(by_strategy.items())
    }
    summary["config"] = dict(config or {})
    return summary
