"""Candidate-tool selection ranks the bundled tools for the paper's example queries."""

from __future__ import annotations

from tools.hub import ToolHub
from tools.selection import select_tools, tokenize


def test_tokenize_splits_names_and_drops_stopwords() -> None:
    assert tokenize("What is the clock_now in Tokyo?") == ["clock", "now", "tokyo"]


async def test_time_and_arithmetic_queries_pick_the_right_tool(hub: ToolHub) -> None:
    specs = list(hub.specs.values())
    assert select_tools("What time is it in Tokyo now? current time", specs, 3)[0][0].name == "clock.now"
    assert (
        select_tools("What is 17 * 23 + 4? arithmetic calculation", specs, 3)[0][0].name == "python.calculate"
    )
    assert select_tools("birth year of Julius Caesar", specs, 3)[0][0].name == "facts.birth_year"
    assert select_tools("zzzz", specs, 3) == []
