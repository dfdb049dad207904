"""The per-system records of ``aisearch eval qa``: one traced aisearch run, or a failure, as data.

The record schema is documented in ``evals/record_metrics.py``.
"""

from __future__ import annotations

import logging
import time
import traceback
from typing import Any

from core.text import CITATION, sentences

log = logging.getLogger(__name__)

TASK_OUTPUT_CHARS = 300  # enough of a task's output to see what a later task was handed

ROUTE_NODES = {
    "plan": "planner",
    "execute_task": "executor",
    "direct_search": "executor",
    "parallel_search": "executor",
    "serial_search": "executor",
    "split_question": "executor",
}


def route_of(trajectory: list[str]) -> str:
    """The team configuration a trajectory shows: ``planner``, ``executor`` or ``writer_only``."""
    for node, route in ROUTE_NODES.items():
        if node in trajectory:
            return route
    return "writer_only"


def answer_sentences(text: str) -> list[dict[str, Any]]:
    """The answer's sentences, each with the source numbers it cites."""
    return [
        {"text": sentence, "cited": sorted({int(n) for n in CITATION.findall(sentence)})}
        for sentence in sentences(text)
        if sentence.strip()
    ]


def aisearch_record(trace: dict[str, Any]) -> dict[str, Any]:
    """The per-system record of one traced aisearch run."""
    values = trace["values"]
    answer = values.get("answer") or {}
    evidence = values.get("evidence") or {}
    results = list((values.get("results") or {}).values()) + list(values.get("discarded") or [])
    assessment = values.get("assessment") or {}
    plan = values.get("plan") or {}
    return {
        "prediction": answer.get("text", ""),
        "short": answer.get("short", ""),
        "compared": answer.get("compared") or {},
        "chain": answer.get("chain") or [],
        "citations": answer.get("citations", []),
        "evidence": [
            {
                "id": eid,
                "title": e.get("title", ""),
                "content": e.get("content", ""),
                "kind": e.get("kind", ""),
            }
            for eid, e in evidence.items()
        ],
        "sentences": answer_sentences(answer.get("text", "")),
        "route": values.get("route") or route_of(trace["trajectory"]),
        "strategy": assessment.get("strategy"),
        "decided_by": assessment.get("decided_by"),
        "assessment_fallback": bool(assessment.get("fallback")),
        "escalated": assessment.get("escalated"),
        "plan_tasks": len(plan.get("tasks", [])),
        "plans": [
            {key: entry.get(key) for key in ("version", "mode", "fallback", "errors")}
            for entry in values.get("plan_log") or []
        ],
        "tasks": [task_line(result) for result in results],
        "tool_calls": sum(len(r.get("tool_calls", [])) for r in results),
        "replans": int(values.get("replans") or 0),
        "missing": values.get("missing") or [],
        "node_seconds": trace["node_seconds"],
        "tokens": trace["tokens"],
        "trajectory": trace["trajectory"],
        "latency_s": round(trace["latency_s"], 3),
        "error": None,
    }


def task_line(result: dict[str, Any]) -> dict[str, Any]:
    """One executed task as a run record keeps it: what it was asked, with what, and what it gave."""
    return {
        "id": result.get("task_id", ""),
        "goal": result.get("goal", ""),
        "tool": result.get("tool"),
        "status": result.get("status", ""),
        "output": (result.get("output") or "")[:TASK_OUTPUT_CHARS],
        "error": result.get("error"),
        "calls": [call.get("args", {}) for call in result.get("tool_calls", [])],
        "plan_version": result.get("plan_version"),
    }


def error_record(exc: BaseException, started: float) -> dict[str, Any]:
    """A system record for a run that failed: the error, as data."""
    message = str(exc) or "no message"
    if isinstance(exc, TimeoutError):
        message = "the question's time limit ran out"
    log.debug("system failed:\n%s", "".join(traceback.format_exception(exc)))
    return {
        "prediction": "",
        "short": "",
        "citations": [],
        "evidence": [],
        "sentences": [],
        "route": "error",
        "node_seconds": {},
        "tokens": {},
        "trajectory": [],
        "latency_s": round(time.perf_counter() - started, 3),
        "error": f"{type(exc).__name__}: {message}"[:500],
    }
