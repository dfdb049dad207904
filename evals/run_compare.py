"""Two QA runs side by side (``aisearch eval compare``): headline metrics per system with their
deltas, and the questions aisearch got right in one run and wrong in the other."""

from __future__ import annotations

from pathlib import Path

from evals.record_metrics import SYSTEM, ordered_systems, record_metrics
from evals.report_cells import DASH, delta, num, table
from evals.run_records import load_run

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


def compare(run_a: str | Path, run_b: str | Path) -> str:
    """Compare two runs side by side: headline metrics per system, deltas, and aisearch EM flips.

    Args:
        run_a: the earlier (reference) run directory.
        run_b: the later run directory; deltas are ``b - a``.

    Returns:
        Markdown text.
    """
    records_a, summary_a = load_run(run_a)
    records_b, summary_b = load_run(run_b)
    label_a, label_b = Path(run_a).name or str(run_a), Path(run_b).name or str(run_b)
    out = [f"# Comparison: {label_a} → {label_b}", ""]
    out += table(
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
    names = ordered_systems({**systems_a, **systems_b})
    rows = []
    for name in names:
        a, b = systems_a.get(name) or {}, systems_b.get(name) or {}
        for metric in COMPARE_METRICS:
            if a.get(metric) is None and b.get(metric) is None:
                continue
            rows.append(
                [name, metric, num(a.get(metric)), num(b.get(metric)), delta(a.get(metric), b.get(metric))]
            )
    for key in ("nwr", "nwr_judge", "replan_rate", "latency_ratio_p50"):
        if summary_a.get(key) is not None or summary_b.get(key) is not None:
            who = "aisearch vs RAG" if key.startswith("nwr") else SYSTEM
            a, b = summary_a.get(key), summary_b.get(key)
            rows.append([who, key, num(a), num(b), delta(a, b)])
    out += ["## Headline metrics", ""]
    out += table(["system", "metric", "A", "B", "Δ (B − A)"], rows)

    # Per-question EM flips of aisearch, on the questions both runs answered.
    em_a = {str(r.get("id")): record_metrics(r, SYSTEM)["em"] for r in records_a}
    em_b = {str(r.get("id")): record_metrics(r, SYSTEM)["em"] for r in records_b}
    common = {i: (a, b) for i, a in em_a.items() if a is not None and (b := em_b.get(i)) is not None}
    fixed = [i for i, (a, b) in common.items() if a < b]
    broken = [i for i, (a, b) in common.items() if a > b]
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
