"""The evaluators of ``aisearch eval qa``: plain functions over a question's record (LangSmith style).

``answer_metrics`` scores every system's answer; ``route_check`` is the trajectory check (the route
read from the checkpoint history must be an expected one); ``trajectory_checks`` sums it over a run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evals.qa_records import route_of
from evals.record_metrics import record_metrics


def answer_metrics(outputs: dict[str, Any], reference_outputs: dict[str, Any]) -> dict[str, Any]:
    """EM, F1, cover, supporting-title recall and citation scores of every system."""
    results = []
    for system in outputs.get("systems", {}):
        for key, value in record_metrics(outputs, system).items():
            if value is not None:
                results.append({"key": f"{system}.{key}", "score": value})
    return {"results": results}


def route_check(outputs: dict[str, Any], reference_outputs: dict[str, Any]) -> dict[str, Any]:
    """Trajectory evaluator: the route read from the checkpoint history must be an expected one.

    Expected routes come from the question (the regression set names them); a question with gold
    supporting documents (HotpotQA) must be searched, so answering it Writer-only is unexpected.
    """
    system = outputs.get("systems", {}).get("aisearch")
    if not system or system.get("error"):
        return {"key": "trajectory.expected_route", "score": None, "comment": "no aisearch run"}
    route = route_of(system.get("trajectory", []))
    expected = reference_outputs.get("expected_route")
    if expected:
        allowed = [expected] if isinstance(expected, str) else list(expected)
    elif reference_outputs.get("supporting_titles"):
        allowed = ["executor", "planner"]
    else:
        return {"key": "trajectory.expected_route", "score": None, "comment": "no expectation"}
    ok = route in allowed
    comment = f"route {route} ({' → '.join(system.get('trajectory', []))}); expected {' or '.join(allowed)}"
    return {"key": "trajectory.expected_route", "score": int(ok), "comment": comment}


EVALUATORS: list[Callable[..., dict[str, Any]]] = [answer_metrics, route_check]


def trajectory_checks(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The trajectory evaluator over every record of the run: how many routes were unexpected."""
    checked, unexpected = 0, []
    for record in records:
        verdict = route_check(record, record)
        if verdict["score"] is None:
            continue
        checked += 1
        if not verdict["score"]:
            unexpected.append({"id": record["id"], "comment": verdict["comment"]})
    return {"checked": checked, "unexpected": len(unexpected), "examples": unexpected[:20]}
