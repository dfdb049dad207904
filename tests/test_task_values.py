"""Lookups that declare a value feed a computation: two years looked up, then their difference."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agents.combine import calculator_for
from agents.executor import numbers_by_id
from core.plan import Task
from tests.conftest import Team, make_settings, run
from tests.support.fakes import (
    EXEC_ARGS,
    EXEC_COMPUTE,
    EXEC_JUDGE,
    EXEC_SEARCH_JUDGE,
    HOP_READ,
    MASTER,
    PLANNER,
    WRITER,
    assessment,
)
from tools.hub import ToolHub, ToolSpec

QUERY = "How many years after the Harrow Point lighthouse was built did the Kestrel Bridge open?"
PLAN = {
    "reasoning": "Two independent lookups, then one computation.",
    "tasks": [
        {
            "id": "t1",
            "goal": "Year the Kestrel Bridge opened",
            "tool": "docsearch.search",
            "args": {"query": "Kestrel Bridge opened"},
            "returns": "a year",
        },
        {
            "id": "t2",
            "goal": "Year the Harrow Point lighthouse was built",
            "tool": "docsearch.search",
            "args": {"query": "Harrow Point lighthouse built"},
            "returns": "a year",
        },
        {
            "id": "t3",
            "goal": "Difference of the two years",
            "tool": "python.calculate",
            "args": {"expression": "{{t1}} - {{t2}}"},
            "deps": ["t1", "t2"],
            "returns": "years",
        },
    ],
}


def read_year(prompt: str) -> str:
    """The reader: the year its question asks for (the passages it read hold both)."""
    question = prompt.rsplit("Question:", 1)[1]
    return "1932" if "Kestrel" in question else "1871"


def scripted_team(*plans: dict, repair_on: str = "come neither from the question") -> Team:
    """A team whose Planner writes ``plans[0]`` and, asked to repair it (``repair_on`` in the
    validation errors it is shown), ``plans[1]``."""
    team = Team()
    team["master"].on(MASTER, assessment("complex", "parallel", resolved=QUERY))
    if len(plans) > 1:
        team["planner"].on(repair_on, plans[1])
    team["planner"].on(PLANNER, plans[0])
    # the executor model reads each lookup as a sentence, which no calculator takes
    team["executor"].on(
        EXEC_SEARCH_JUDGE,
        {
            "answer": "The passage says it happened in that year.",
            "sources": [1],
            "sufficient": True,
            "next_queries": [],
        },
    )
    team["master"].on(
        EXEC_JUDGE, lambda p: {"sufficient": True, "result": p.split("Tool output:\n")[1].split("\n")[0]}
    )
    team["writer"].on(HOP_READ, read_year).on(
        WRITER, "The bridge opened 61 years after the lighthouse was built [1]."
    )
    return team


async def run_team(team: Team, docs_hub: ToolHub) -> dict:
    settings = make_settings()
    settings.tool_candidates = 12  # the calculator among them
    state, _, _ = await run(team.resources(docs_hub, settings), QUERY)
    return state


@pytest.mark.slow
async def test_two_looked_up_years_reach_the_calculator_as_numbers(
    docs_hub: ToolHub, fixture_index: Path
) -> None:
    team = scripted_team(PLAN)

    state = await run_team(team, docs_hub)

    results = state["results"]
    assert (results["t1"]["output"], results["t2"]["output"]) == ("1932", "1871")
    (call,) = results["t3"]["tool_calls"]
    assert call["args"] == {"expression": "1932 - 1871"} and results["t3"]["output"].startswith("61")
    assert all(r["status"] == "ok" for r in results.values())
    assert not [c for c in team["master"].calls if EXEC_JUDGE in c.prompt], (
        "a calculator's number is not judged"
    )
    assert state["plan"]["version"] == 1, "computed without a re-plan"
    # the computed difference answers the "how many" question, and the tasks are its reasons:
    # each looked-up year cited to the passage that states it, then the computation
    assert state["answer"]["short"] == "61"
    assert not [c for c in team["writer"].calls if WRITER in c.conversation], "no Writer call"
    text = state["answer"]["text"]
    assert (
        "Year the Kestrel Bridge opened: 1932 [" in text
        and "Year the Harrow Point lighthouse was built: 1871 [" in text
    )
    assert text.endswith("Difference of the two years: 1932 - 1871 = 61 [1][2].")
    assert not state["answer"]["dropped_citations"], "each year's citation names a passage that states it"


@pytest.mark.slow
async def test_lookups_a_calculation_takes_are_read_as_numbers_without_being_told(
    docs_hub: ToolHub, fixture_index: Path
) -> None:
    untold = {**PLAN, "tasks": [{k: v for k, v in task.items() if k != "returns"} for task in PLAN["tasks"]]}
    team = scripted_team(untold)

    state = await run_team(team, docs_hub)

    results = state["results"]
    assert (results["t1"]["output"], results["t2"]["output"]) == ("1932", "1871")
    assert results["t3"]["tool_calls"][0]["args"] == {"expression": "1932 - 1871"}
    assert state["answer"]["short"] == "61"


@pytest.mark.slow
async def test_a_year_the_planner_did_not_look_up_sends_the_plan_back_for_repair(
    docs_hub: ToolHub, fixture_index: Path
) -> None:
    # the small Planner "knows" the lighthouse's year and types it into the calculation
    invented = {
        "reasoning": "One lookup, then the difference.",
        "tasks": [
            PLAN["tasks"][0],
            {**PLAN["tasks"][2], "args": {"expression": "{{t1}} - 1870"}, "deps": ["t1"]},
        ],
    }
    team = scripted_team(invented, PLAN)

    state = await run_team(team, docs_hub)

    (entry,) = state["plan_log"]
    assert [t["id"] for t in entry["tasks"]] == ["t1", "t2", "t3"] and not entry["fallback"]
    assert "the number(s) 1870 in its args come neither from the question" in entry["errors"][0]
    assert state["results"]["t3"]["tool_calls"][0]["args"] == {"expression": "1932 - 1871"}


@pytest.mark.slow
async def test_a_plan_that_leaves_the_lookups_uncombined_is_sent_back_to_compute(
    docs_hub: ToolHub, fixture_index: Path
) -> None:
    # both years looked up, nothing subtracts them: the Writer would do the arithmetic
    lookups_only = {"reasoning": "Two lookups.", "tasks": PLAN["tasks"][:2]}
    team = scripted_team(lookups_only, PLAN, repair_on="each end the plan")

    state = await run_team(team, docs_hub)

    (entry,) = state["plan_log"]
    assert [t["id"] for t in entry["tasks"]] == ["t1", "t2", "t3"] and not entry["fallback"]
    assert "tasks t1, t2 each end the plan and no task combines their results" in entry["errors"][0]
    assert state["answer"]["short"] == "61"


@pytest.mark.slow
async def test_a_difference_planned_without_a_tool_is_computed_by_the_calculator(
    docs_hub: ToolHub, fixture_index: Path
) -> None:
    # the small Planner leaves the arithmetic to the executor model, which gets it wrong in its head
    toolless = {**PLAN, "tasks": [*PLAN["tasks"][:2], {**PLAN["tasks"][2], "tool": None, "args": {}}]}
    team = scripted_team(toolless)
    # the 0.5B names the inputs by the ids it is shown them under
    team["executor"].on(EXEC_ARGS, {"expression": "t1 - t2"}).on(
        EXEC_COMPUTE, {"result": "57", "complete": True}
    )

    state = await run_team(team, docs_hub)

    t3 = state["results"]["t3"]
    assert t3["tool"].startswith("python.calculate") and t3["output"].startswith("61")
    assert [call["args"] for call in t3["tool_calls"]] == [{"expression": "1932 - 1871"}]
    assert not [c for c in team["executor"].calls if EXEC_COMPUTE in c.prompt], "not from the model's head"
    assert state["answer"]["short"] == "61"


def test_only_numbers_for_one_quantity_go_to_the_calculator() -> None:
    calculate = ToolSpec(
        "python.calculate", "python", "Evaluate arithmetic.", {"properties": {"expression": {}}}
    )
    search = ToolSpec("docsearch.search", "docsearch", "Search.", {"properties": {"query": {}}})
    run: Any = SimpleNamespace(tools=SimpleNamespace(specs={spec.name: spec for spec in (calculate, search)}))
    task = Task(id="t3", goal="Difference of the two years", deps=["t1", "t2"])

    def payload(query: str, outputs: dict[str, str], calls_left: int = 4) -> Any:
        candidates = ["docsearch.search", "python.calculate"]
        return {
            "parent_outputs": outputs,
            "query": query,
            "tool_calls_left": calls_left,
            "candidates": candidates,
        }

    years = {"t1": "1932", "t2": "1871"}
    assert calculator_for(run, task, payload(QUERY, years)) == "python.calculate"
    assert calculator_for(run, task, payload(QUERY, {"t1": "1932", "t2": "in 1871"})) is None, (
        "not a bare number"
    )
    assert (
        calculator_for(run, task, payload("Which opened first, the bridge or the lighthouse?", years)) is None
    )
    assert calculator_for(run, task, payload(QUERY, years, calls_left=0)) is None, "no call left to make"
    unretrieved = {**payload(QUERY, years), "candidates": ["docsearch.search"]}
    assert calculator_for(run, task, unretrieved) == "python.calculate", "the run's calculator, not retrieved"
    bound = task.model_copy(update={"tool": "docsearch.search"})
    assert calculator_for(run, bound, payload(QUERY, years)) is None


def test_an_input_named_by_its_id_is_written_in_when_it_is_a_number() -> None:
    outputs = {"t1": "1866", "t2": " 1867 ", "t3": "Rubén Darío"}
    args = {"expression": "t2 - t1 + t3", "k": 5, "note": "t10 and at1"}
    assert numbers_by_id(args, outputs) == {"expression": "1867 - 1866 + t3", "k": 5, "note": "t10 and at1"}
    referenced = {"expression": "{{t2}} - {{ t1 }}"}
    assert numbers_by_id(referenced, {"t1": "1866", "t2": "1867"}) == {"expression": "1867 - 1866"}, (
        "a plan-style reference too"
    )
