"""The module table of docs/architecture.md names every top-level module of each room, and only modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOMS = ("app", "evals", "bench", "graph", "agents", "core", "tools", "models", "distill")


def table_rows() -> dict[str, str]:
    """``room -> what the table says lives there`` from the Modules section of docs/architecture.md."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Modules", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)/` \| (.*) \|$", section, re.MULTILINE)}


def test_every_module_is_in_the_table_and_every_named_module_exists() -> None:
    rows = table_rows()
    assert set(ROOMS) <= set(rows)
    for room in ROOMS:
        on_disk = {p.name for p in (REPO / room).glob("*.py") if p.name != "__init__.py"}
        named = set(re.findall(r"`([\w]+\.py)`", rows[room]))
        assert on_disk - named == set(), f"{room}/ modules missing from the table in docs/architecture.md"
        anywhere = {p.name for p in (REPO / room).rglob("*.py")}
        assert named - anywhere == set(), f"{room}/ row names modules that do not exist"
