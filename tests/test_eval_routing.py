"""``evals/routing.py``: the Master's decisions over a question set, scored against expected routes."""

from __future__ import annotations

import pytest

from evals.routing import markdown, route_questions, summarize
from tests.conftest import Team, make_settings
from tests.support.fakes import MASTER, assessment
from tools.hub import ToolHub

QUESTIONS = [
    {"id": "calc", "question": "What is 17 * 23 + 4?", "expected_route": ["executor"]},
    {
        "id": "elder",
        "question": "Who is elder, Han-Wu or Caesar, by how many years?",
        "expected_route": "planner",
    },
    {"id": "follow", "question": "What did he found?", "expected_route": ["executor"]},
]


@pytest.mark.slow
async def test_route_accuracy_and_what_decided(team: Team, hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("simple"))  # the LLM is asked only for the unclear question
    resources = team.resources(hub, make_settings(routing="cheap"))

    records = await route_questions(resources, QUESTIONS)

    assert [(r["route"], r["decided_by"]) for r in records[:2]] == [
        ("executor", "rules"),
        ("planner", "rules"),
    ]
    assert records[2]["decided_by"] in {"llm", "classifier"}
    summary = summarize(records)
    assert summary["n"] == 3 and summary["judged"] == 3
    assert summary["by_path"]["rules"] == {
        "n": 2, "share": 2 / 3, "accuracy": 1.0, "seconds_p50": summary["by_path"]["rules"]["seconds_p50"],
    }  # fmt: skip
    text = markdown(summary, records, ["- **routing**: cheap"])
    assert "| rules | 2 | 0.67 | 1.00 |" in text and "What is 17 * 23 + 4?" in text
