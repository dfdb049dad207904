"""Route accuracy: how the Master routes a set of questions, what decided each route, at what cost.

``aisearch eval routes`` runs only the Master's decision (``agents.master.read_query``: the cheap
router, then the LLM for what it leaves open) over questions that name their ``expected_route``
(``evals/data/regression.jsonl``) or carry a HotpotQA ``type``, and reports the route accuracy,
how often each path decided (rules, classifier, probe: no LLM call; llm), and the seconds per
decision on each path.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from agents.assessment import route_for
from agents.master import read_query
from core.run import Run
from evals.stats import percentile


async def route_questions(run: Run, questions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The Master's decision for each question (a fresh conversation each), timed."""
    records = []
    today = run.now().strftime("%A, %Y-%m-%d %H:%M %Z").strip()
    for question in questions:
        started = time.perf_counter()
        reading = await read_query(run, {"query": question["question"]}, question["question"], today)
        expected = question.get("expected_route")
        records.append(
            {
                "id": question.get("id"),
                "question": question["question"],
                "type": question.get("type"),
                "expected_route": [expected] if isinstance(expected, str) else expected,
                "route": route_for(reading),
                "strategy": reading.strategy,
                "decided_by": reading.decided_by,
                "facets": reading.facets,
                "seconds": round(time.perf_counter() - started, 3),
            }
        )
    return records


def summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Route accuracy (over questions with an expected route) and, per deciding path, its share,
    accuracy and seconds per decision; for typed questions, the strategies chosen per type."""
    judged = [r for r in records if r.get("expected_route")]
    paths: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        paths[record["decided_by"]].append(record)
    strategies: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in records:
        if record.get("type"):
            strategies[record["type"]][f"{record['route']}/{record['strategy']}"] += 1
    return {
        "n": len(records),
        "accuracy": _accuracy(judged),
        "judged": len(judged),
        "seconds_p50": percentile([r["seconds"] for r in records], 50) if records else None,
        "by_path": {
            path: {
                "n": len(rows),
                "share": len(rows) / len(records),
                "accuracy": _accuracy([r for r in rows if r.get("expected_route")]),
                "seconds_p50": percentile([r["seconds"] for r in rows], 50),
            }
            for path, rows in sorted(paths.items(), key=lambda item: -len(item[1]))
        },
        "strategies_by_type": {kind: dict(counts) for kind, counts in strategies.items()},
    }


def _accuracy(records: Sequence[Mapping[str, Any]]) -> float | None:
    if not records:
        return None
    return sum(r["route"] in r["expected_route"] for r in records) / len(records)


def markdown(summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]], header: Sequence[str]) -> str:
    """The routing report: headline, paths, per-question decisions."""

    def num(value: Any, digits: int = 2) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    out = ["# Routing: the Master's decisions", "", *header, ""]
    out += [
        f"{summary['n']} questions; route accuracy {num(summary['accuracy'])} over the "
        f"{summary['judged']} with an expected route; P50 {num(summary['seconds_p50'])} s per decision.",
        "",
        "| decided by | n | share | route accuracy | P50 s per decision |",
        "|---|---|---|---|---|",
    ]
    for path, entry in summary["by_path"].items():
        out.append(
            f"| {path} | {entry['n']} | {num(entry['share'])} | {num(entry['accuracy'])} "
            f"| {num(entry['seconds_p50'])} |"
        )
    if summary["strategies_by_type"]:
        out += ["", "| question type | route/strategy: count |", "|---|---|"]
        for kind, counts in sorted(summary["strategies_by_type"].items()):
            cells = ", ".join(
                f"{name}: {count}" for name, count in sorted(counts.items(), key=lambda i: -i[1])
            )
            out.append(f"| {kind} | {cells} |")
    if any(r.get("expected_route") for r in records):
        out += [
            "",
            "| question | expected | route | strategy | decided by | s |",
            "|---|---|---|---|---|---|",
        ]
        for r in records:
            if r.get("expected_route"):
                out.append(
                    f"| {r['question']} | {' or '.join(r['expected_route'])} | {r['route']} | {r['strategy']} "
                    f"| {r['decided_by']} | {num(r['seconds'])} |"
                )
    return "\n".join(out) + "\n"
