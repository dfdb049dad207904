"""Citable evidence from tool outputs: one item per retrieved passage, else the whole output.

Ids are stable: a passage keeps the id its search server gave it, and any other output gets an id
derived from its content, so the same source is the same ``[n]`` across rounds, tasks and runs.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from core.plan import Task
from core.state import Evidence
from tools.hub import ToolOutcome

ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")


def evidence_id(kind: str, *parts: str) -> str:
    """A stable id: the same source content always gets the same id."""
    digest = hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:10]
    return f"{kind[0]}-{digest}"


def _passages(structured: Any) -> list[dict[str, Any]]:
    """Passages in a search tool's structured result: ``{"results": [{"id", "title", "source", ...}]}``."""
    if not isinstance(structured, dict) or not isinstance(structured.get("results"), list):
        return []
    return [
        item
        for item in structured["results"]
        if isinstance(item, dict) and item.get("id") and (item.get("snippet") or item.get("text"))
    ]


def published_day(item: dict[str, Any]) -> str:
    """The day a passage was published as its source gives it (``2026-11-18`` from an ISO time,
    else as written, e.g. "3 days ago"); "" when it gives none."""
    published = str(item.get("published") or "").strip()
    return published[:10] if ISO_DAY.match(published) else published


def dated(item: dict[str, Any], content: str) -> str:
    """A passage's text with its publication date in front, when its source gives one (web pages)."""
    day = published_day(item)
    return f"(published {day}) {content}" if day else content


def newest_first(items: list[Evidence]) -> list[Evidence]:
    """``items`` with those dated by an ISO day first, newest first; the others after, in order.

    For a question about the present the newest page is the one to read first: a small reader
    takes the first figure it meets.
    """
    days = [item.get("published", "") for item in items]
    dated_items = [item for item, day in zip(items, days, strict=True) if ISO_DAY.match(day)]
    undated = [item for item, day in zip(items, days, strict=True) if not ISO_DAY.match(day)]
    return sorted(dated_items, key=lambda item: item.get("published", ""), reverse=True) + undated


def tool_evidence(task: Task, outcome: ToolOutcome) -> list[Evidence]:
    """Citable evidence from a successful call: one item per retrieved passage, else the whole output.

    Passages keep the id the search server gave them (stable across runs), so the Writer's
    citations point at real passages.
    """
    passages = _passages(outcome.structured)
    if passages:
        found = []
        for item in passages:
            evidence = Evidence(
                id=str(item["id"]),
                kind="document",
                title=str(item.get("title") or item["id"]),
                source=str(item.get("source") or item.get("url") or outcome.tool),
                content=dated(item, str(item.get("text") or item.get("snippet"))),
                task_id=task.id,
            )
            if day := published_day(item):
                evidence["published"] = day
            found.append(evidence)
        return found
    args = json.dumps(outcome.args, sort_keys=True, ensure_ascii=False)
    server, _, tool = outcome.tool.partition(".")
    return [
        Evidence(
            id=evidence_id("tool", outcome.tool, args, outcome.output),
            kind="tool",
            title=f"{outcome.tool}({args})",
            source=f"mcp://{server}/{tool}",
            content=outcome.output,
            task_id=task.id,
        )
    ]


def search_evidence(task: Task, outcome: ToolOutcome) -> list[Evidence]:
    """Evidence from a search tool's call: its passages (none for an empty result list); a search
    tool that answers in plain text gives its whole output as one item."""
    structured = outcome.structured
    if isinstance(structured, dict) and isinstance(structured.get("results"), list):
        return tool_evidence(task, outcome) if _passages(structured) else []
    return tool_evidence(task, outcome) if outcome.output.strip() else []
