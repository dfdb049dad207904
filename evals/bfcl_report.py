"""The summary and Markdown report of an ``aisearch eval bfcl`` run.

Summary keys: ``n``, ``correct``, ``accuracy`` (the unweighted mean of the categories' accuracies,
as BFCL averages its categories), ``micro_accuracy`` (over all tasks), ``failures`` (endpoint errors
and timeouts, scored wrong), ``p50_ms`` / ``p80_ms`` (per-step latency over the steps that got a
reply), ``by_category`` (the same keys per category), ``sources`` (how the calls were read:
``tool_calls``, ``text`` or ``none``), ``error_types`` (BFCL's reasons), and the run's config
(role, model, endpoint, split, data, the tool documents shown — ``tool_docs``, and with refined
documents ``refined_documents``, the functions that had one, and ``stale_refinements`` — command,
date, versions, machine); with decline margins recorded, ``decline_margins``
(:func:`evals.decline_margin.margin_summary`).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from evals.decline_margin import margin_summary
from evals.stats import percentile

FAILURES_SHOWN = 10


def _block(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts, accuracy and latency percentiles of a group of records."""
    answered = [float(r["latency_ms"]) for r in records if not r.get("failure")]
    correct = sum(1 for r in records if r.get("correct"))
    return {
        "n": len(records),
        "correct": correct,
        "accuracy": round(correct / len(records), 4) if records else None,
        "failures": sum(1 for r in records if r.get("failure")),
        "p50_ms": round(percentile(answered, 50), 1) if answered else None,
        "p80_ms": round(percentile(answered, 80), 1) if answered else None,
    }


def summarise(records: list[dict[str, Any]], config: dict[str, Any]) -> dict[str, Any]:
    """The run's summary (keys in the module docstring)."""
    categories = [c for c in config.get("categories", []) if any(r["category"] == c for r in records)]
    categories += sorted({r["category"] for r in records} - set(categories))
    by_category = {c: _block([r for r in records if r["category"] == c]) for c in categories}
    overall = _block(records)
    accuracies = [b["accuracy"] for b in by_category.values() if b["accuracy"] is not None]
    margins = margin_summary(records)
    return {
        **overall,
        "micro_accuracy": overall["accuracy"],
        "accuracy": round(sum(accuracies) / len(accuracies), 4) if accuracies else None,
        "by_category": by_category,
        "sources": dict(Counter(r.get("source", "none") for r in records)),
        "error_types": dict(Counter(r["error_type"] for r in records if r.get("error_type")).most_common()),
        "config": config,
        **({"decline_margins": margins} if margins else {}),
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _tool_docs(config: dict[str, Any]) -> str:
    """Which tool documents the run showed: the functions' own, or their DRAFT-refined ones."""
    if config.get("tool_docs", "original") == "original":
        return "original"
    refined = config.get("refined_documents") or {}
    text = f"refined, for {', '.join(f'`{name}`' for name in refined) or 'no function'}"
    stale = config.get("stale_refinements") or []
    if stale:
        text += f"; refined from another original, not shown: {', '.join(f'`{name}`' for name in stale)}"
    return text


def _margins(margins: dict[str, Any]) -> str:
    """The decline margins in one paragraph: their ranking (AUC) and each category's lean."""
    auc = margins.get("auc")
    parts = [
        f"{name} {block['leaning_to_decline']} of {block['n']} (median {block['median']:+.2f})"
        for name, block in margins["by_category"].items()
    ]
    best = margins.get("best_threshold")
    scored = margins.get("best_threshold_accuracy")
    estimate = "" if scored is None else f", estimated accuracy with it {scored:.1%}"
    decided = margins.get("decided") or {}
    turned = (
        f" A threshold turned {decided.get('declined', 0)} calls into declines and {decided.get('called', 0)} declines into calls."
        if decided
        else ""
    )
    return (
        f"Decline margins (log-odds of declining at the deciding token): AUC irrelevance vs the rest "
        f"{'–' if auc is None else f'{auc:.3f}'}; leaning to decline: " + ", ".join(parts) + ". "
        f"The threshold that would have served this run best: {'–' if best is None else f'{best:+.3f}'}"
        f"{estimate} (choose it on a tuning split, apply it to another).{turned}"
    )


def markdown(summary: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The run's report as Markdown."""
    config = summary.get("config", {})
    machine = config.get("machine", {})
    lines = [
        "# BFCL tool calling",
        "",
        f"- **command**: `{config.get('command', '')}`",
        f"- **date**: {config.get('date', '')}",
        f"- **role / model**: {config.get('role')} / `{config.get('model')}` at {config.get('base_url')}",
        f"- **mode**: {config.get('mode', 'fc')}",
        f"- **tool documents**: {_tool_docs(config)}",
        f"- **data**: {config.get('data')}, split **{config.get('split')}**, "
        f"{config.get('n') or 'all'} per category",
        f"- **machine**: {machine.get('cpus')} CPUs, load {machine.get('load_average')}",
        "",
        "| category | n | accuracy | failures | P50 ms | P80 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, block in summary["by_category"].items():
        lines.append(
            f"| {name} | {block['n']} | {_pct(block['accuracy'])} | {block['failures']} | "
            f"{_ms(block['p50_ms'])} | {_ms(block['p80_ms'])} |"
        )
    lines.append(
        f"| **overall** | {summary['n']} | **{_pct(summary['accuracy'])}** | {summary['failures']} | "
        f"{_ms(summary['p50_ms'])} | {_ms(summary['p80_ms'])} |"
    )
    lines += [
        "",
        f"Overall accuracy is the mean of the categories' (as BFCL averages them); over all tasks it "
        f"is {_pct(summary['micro_accuracy'])}. Latency is one model call per task (a step), over the "
        "steps that got a reply; failures are endpoint errors and timeouts, scored wrong.",
        "",
        "Calls read from: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["sources"].items())),
    ]
    if margins := summary.get("decline_margins"):
        lines += ["", _margins(margins)]
    if summary["error_types"]:
        lines += ["", "Why tasks were wrong (BFCL's error types):"]
        lines += [f"- `{kind}`: {count}" for kind, count in summary["error_types"].items()]
    wrong = [r for r in records if not r.get("correct")][:FAILURES_SHOWN]
    if wrong:
        lines += [
            "",
            f"## First {len(wrong)} wrong tasks",
            "",
            "| id | error | calls |",
            "| --- | --- | --- |",
        ]
        for r in wrong:
            error = str(r.get("error") or "").replace("|", "\\|").replace("\n", " ")[:160]
            said = json.dumps(r["calls"], ensure_ascii=False) if r.get("calls") else r.get("text") or ""
            calls = said.replace("|", "\\|").replace("\n", " ")[:160]
            lines.append(f"| {r['id']} | {error} | `{calls}` |")
    return "\n".join(lines) + "\n"


def write_report(run_dir: Path, summary: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    """Write ``report.md`` into the run directory; its path."""
    path = run_dir / "report.md"
    path.write_text(markdown(summary, records), encoding="utf-8")
    return path
