"""The cells and tables the evaluation reports write in Markdown: numbers, deltas, intervals, tables
and the run's configuration (the QA report, the run comparison and the CQED report share them)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

DASH = "–"
CONFIG_FIRST = ("command", "machine", "date")


def num(value: Any, digits: int = 3) -> str:
    """``value`` as a cell: floats with ``digits`` decimals, a dash for None."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def delta(a: Any, b: Any, digits: int = 3) -> str:
    """``b - a`` with its sign, a dash unless both are numbers."""
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return DASH
    return f"{b - a:+.{digits}f}" if isinstance(a, float) or isinstance(b, float) else f"{b - a:+d}"


def interval(bounds: Sequence[float] | None) -> str:
    """A 95 % interval as ``[low, high]`` with signs, a dash when there is none."""
    if not bounds or len(bounds) != 2:
        return DASH
    return f"[{bounds[0]:+.3f}, {bounds[1]:+.3f}]"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines, and a blank line after it."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]


def config_lines(config: Mapping[str, Any]) -> list[str]:
    """The run's configuration as a list, its command, machine and date first."""
    if not config:
        return ["_No run configuration recorded._", ""]
    keys = [k for k in CONFIG_FIRST if k in config] + sorted(k for k in config if k not in CONFIG_FIRST)
    lines = []
    for key in keys:
        value = config[key]
        text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)
        lines.append(f"- **{key}**: `{text}`" if key == "command" else f"- **{key}**: {text}")
    return lines + [""]
