"""The executor's inner loop: refine after an insufficient output, stay within its budgets."""

from __future__ import annotations

import pytest

from agents.executor import Judgement, computed_value, stated_result
from tests.conftest import Team, make_settings, run
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, PLANNER, WRITER, assessment
from tools.hub import ToolHub, ToolSpec

QUERY = "When was Julius Caesar born?"


@pytest.mark.slow
async def test_insufficient_output_is_refined_and_called_again(team: Team, hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("moderate", resolved=QUERY, intent="birth year lookup"))
    team["executor"].on(EXEC_ARGS, {"person": "Caesar the dictator"})
    team["master"].on(
        lambda p: EXEC_JUDGE in p and "No record" in p,
        {"sufficient": False, "result": "", "retry_args": {"person": "Julius Caesar"}},
    )
    team["master"].on(EXEC_JUDGE, {"sufficient": True, "result": "100 BC"})
    team["writer"].on(WRITER, "Julius Caesar was born in 100 BC [1].")

    state, _, _ = await run(team.resources(hub), QUERY)

    (result,) = state["results"].values()
    assert [c["args"] for c in result["tool_calls"]] == [
        {"person": "Caesar the dictator"},
        {"person": "Julius Caesar"},
    ]
    assert result["status"] == "ok" and result["output"] == "100 BC"
    assert len(result["evidence_ids"]) == 2
    assert len([c for c in team["executor"].calls if EXEC_ARGS in c.prompt]) == 1, (
        "refined args came from the judge"
    )


@pytest.mark.slow
async def test_a_reading_the_output_does_not_state_is_not_the_result(team: Team, hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("moderate", resolved=QUERY, intent="birth year lookup"))
    team["executor"].on(EXEC_ARGS, {"person": "Julius Caesar"})
    team["master"].on(EXEC_JUDGE, {"result": "Yes", "sufficient": True})
    team["writer"].on(WRITER, "Julius Caesar was born in 100 BC [1].")

    state, _, _ = await run(team.resources(hub), QUERY)

    (result,) = state["results"].values()
    assert result["status"] == "ok" and "100 BC" in result["output"], result["output"]
    assert not any(EXEC_JUDGE in c.prompt for c in team["executor"].calls), "the Master's model judges"


def test_a_stated_reading_is_the_result() -> None:
    output = "Lyon:  population 522,250\n(2020 census)."
    assert stated_result(Judgement(result="Population 522,250 (2020", sufficient=True), output) == (
        "Population 522,250 (2020"
    )
    assert stated_result(Judgement(result="4,102,650", sufficient=True), output) == output
    assert stated_result(Judgement(sufficient=True), output) == output


def test_only_a_closed_world_tools_value_stands_without_a_judge() -> None:
    calculator = ToolSpec("python.calculate", "python", "Calculator", {}, cacheable=True)
    lookup = ToolSpec("facts.birth_year", "facts", "Birth years", {}, cacheable=False)
    assert computed_value(calculator, " 61\n") == "61"
    assert computed_value(lookup, "100 BC") is None, "an open-world tool's output is judged"
    assert computed_value(calculator, "") is None
    assert computed_value(calculator, "a passage\nof text") is None, "a document is read by the judge"
    assert computed_value(calculator, "9" * 101) is None


@pytest.mark.slow
async def test_insufficient_after_the_last_round_is_incomplete(team: Team, hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("moderate", resolved=QUERY, intent="birth year lookup"))
    team["planner"].on(
        PLANNER, {"tasks": [{"id": "t2", "goal": "Recall when Caesar was born", "tool": None}]}
    )
    team["executor"].on(EXEC_ARGS, {"person": "Nobody"})
    team["master"].on(
        EXEC_JUDGE, {"sufficient": False, "result": "no record", "retry_args": {"person": "No one"}}
    )
    team["executor"].on("Solve this sub-task", {"result": "100 BC", "complete": True})
    team["writer"].on(WRITER, "Julius Caesar was born in 100 BC [2].")
    settings = make_settings(max_executor_rounds=2)

    state, path, _ = await run(team.resources(hub, settings), QUERY)

    first = state["results"]["t1"]
    assert first["status"] == "incomplete" and len(first["tool_calls"]) == 2
    assert first["output"] == "No record found for Nobody.\nNo record found for No one.", (
        "the tool's outputs, not the judge's reading of them"
    )
    # the executor route escalates to the planner, which augments the one-task plan
    assert [e["mode"] for e in state["plan_log"]] == ["single", "augment"]
    assert state["results"]["t2"]["status"] == "ok"
    assert path[:3] == ["master", "select_tools", "dispatch"]


@pytest.mark.slow
async def test_every_role_prompt_carries_the_current_date_not_the_time(hub: ToolHub) -> None:
    team = Team()
    team["master"].on(MASTER, assessment("complex", resolved="How many days until 2026-12-25?"))
    team["planner"].on(PLANNER, {"tasks": [{"id": "t1", "goal": "Count the days", "tool": None}]})
    team["executor"].on("Solve this sub-task", {"result": "33", "complete": True})
    team["writer"].on(WRITER, "33 days [1].")

    await run(team.resources(hub), "How many days until Christmas?")

    for role in ("master", "planner", "executor", "writer"):
        assert "2026-11-22" in team[role].calls[0].prompt, role
        assert "09:00" not in team[role].calls[0].prompt, f"{role}: the date, not the time of day"
