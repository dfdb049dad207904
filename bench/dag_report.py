"""``aisearch bench dag``'s report: the measured rows summed up into the JSON contract, and as a
short Markdown page (the measuring itself is ``bench/dag.py``)."""

from __future__ import annotations

from typing import Any

from evals.stats import percentile

MODES = ("parallel", "sequential")


def ratio(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator`` to three places; None over nothing."""
    return round(numerator / denominator, 3) if denominator > 0 else None


def _p(values: list[float], q: float) -> float:
    return round(percentile(values, q), 3)


def summarise(rows: list[dict[str, Any]], parallel_cap: int) -> dict[str, Any]:
    """The report: the JSON contract's keys first, then the detail and the rows."""
    measured = [row for row in rows if "skipped" not in row]
    stats: dict[str, Any] = {}
    for mode in MODES:
        execs = [row[mode]["exec_s"] for row in measured]
        e2e = [row[mode]["e2e_s"] for row in measured]
        stats[mode] = {
            "p50": _p(execs, 50),
            "p80": _p(execs, 80),
            "e2e_p50": _p(e2e, 50),
            "e2e_p80": _p(e2e, 80),
            "success": round(sum(row[mode]["em"] for row in measured) / len(measured), 3)
            if measured
            else 0.0,
        }
    parallel, sequential = stats["parallel"], stats["sequential"]
    efficiencies = [row["scheduling_efficiency"] for row in measured if row["scheduling_efficiency"]]
    uncontended = [row["uncontended_efficiency"] for row in measured if row["uncontended_efficiency"]]
    plans = [row["plan_s"] for row in rows if row.get("plan_s") is not None]
    rags = [row["rag"] for row in measured if "rag" in row]
    rag_p50 = _p([rag["s"] for rag in rags], 50) if rags else None
    waves = [row["first_wave_speedup"] for row in measured if row.get("first_wave_speedup")]
    return {
        "n": len(measured),
        "parallel_p50_s": parallel["p50"],
        "sequential_p50_s": sequential["p50"],
        "speedup": ratio(sequential["p50"], parallel["p50"]),
        "end_to_end_speedup": ratio(sequential["e2e_p50"], parallel["e2e_p50"]),
        "parallel_success": parallel["success"],
        "sequential_success": sequential["success"],
        "scheduling_efficiency": _p(efficiencies, 50) if efficiencies else None,
        "uncontended_efficiency": _p(uncontended, 50) if uncontended else None,
        "first_wave_speedup": _p(waves, 50) if waves else None,
        "parallel_p80_s": parallel["p80"],
        "sequential_p80_s": sequential["p80"],
        "parallel_e2e_p50_s": parallel["e2e_p50"],
        "parallel_e2e_p80_s": parallel["e2e_p80"],
        "sequential_e2e_p50_s": sequential["e2e_p50"],
        "sequential_e2e_p80_s": sequential["e2e_p80"],
        "plan_p50_s": _p(plans, 50) if plans else None,
        "rag_p50_s": rag_p50,
        "rag_success": round(sum(rag["em"] for rag in rags) / len(rags), 3) if rags else None,
        "end_to_end_vs_rag": ratio(parallel["e2e_p50"], rag_p50) if rag_p50 else None,
        "parallel_plans": sum(1 for row in measured if row["waves"] and len(row["waves"][0]) > 1),
        "sequential_overlaps": sum(row["sequential"]["overlapping_pairs"] for row in measured),
        "skipped": len(rows) - len(measured),
        "parallel_cap": parallel_cap,
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as a short Markdown page."""
    lines = [
        f"# DAG vs sequential execution ({report['date']})",
        "",
        f"{report['n']} HotpotQA comparison questions on the Planner route ({report['skipped']} skipped: no plan), "
        f"the same plan run with at most {report['parallel_cap']} tasks at once and one at a time; "
        f"{report['machine']}, load average {report['load_average']['before']} before, "
        f"{report['load_average']['after']} after; commit {report['commit']}.",
        "",
        "| mode | execution P50 s | execution P80 s | end-to-end P50 s | end-to-end P80 s | success (EM) |",
        "|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        lines.append(
            f"| {mode} | {report[f'{mode}_p50_s']} | {report[f'{mode}_p80_s']} | {report[f'{mode}_e2e_p50_s']} "
            f"| {report[f'{mode}_e2e_p80_s']} | {report[f'{mode}_success']} |"
        )
    lines += [
        "",
        f"Speedup (execution P50): {report['speedup']}; end to end: {report['end_to_end_speedup']}; "
        f"scheduling efficiency (critical path / execution, P50): {report['scheduling_efficiency']} "
        f"(uncontended durations: {report['uncontended_efficiency']}); first wave alone, one by one over at "
        f"once (P50): {report['first_wave_speedup']}. Plan P50 {report['plan_p50_s']} s; "
        f"{report['parallel_plans']} of {report['n']} plans had a first wave of two or more tasks; "
        f"overlapping task pairs in the sequential runs: {report['sequential_overlaps']}.",
        "",
        f"Same-model RAG on the same questions: P50 {report.get('rag_p50_s')} s, success "
        f"{report.get('rag_success')}; the parallel mode's end-to-end P50 is "
        f"{report.get('end_to_end_vs_rag')}× RAG's. The prefix (Master, tool selection, plan) and RAG "
        + (
            "read the model server's prompt cache, as `aisearch ask` does."
            if report.get("prompt_cache")
            else "read no cached prompt."
        ),
    ]
    return "\n".join(lines) + "\n"
