"""Arguments that do not fit the bound tool but fit another tool of the task's reach go to that tool,
before any retry or backup: with the real clock tools, and the Executor with scripted models."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from agents.executor import args_model, run_tool_task
from agents.executor_rebind import Binding, rebind, task_reach
from core.plan import Task, task_payload
from core.state import TaskPayload
from tests.conftest import Team, make_settings, server_connections
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE
from tools.hub import ToolHub, ToolSpec
from tools.schema import normalise_schema
from tools.servers import clock_server

QUERY = "How many days are there between 2024-03-01 and 2024-12-25?"
CANDIDATES = ["clock.shift_date", "clock.date_diff", "clock.now"]
ADD = ToolSpec(
    "calc.add",
    "calc",
    "Add two numbers.",
    {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)


async def described_hub() -> ToolHub:
    """A hub over the clock's real tools (listed in-process) and a calculator; nothing started."""
    listed = await clock_server.mcp.list_tools()
    clock = [
        ToolSpec(f"clock.{tool.name}", "clock", tool.description or "", normalise_schema(tool.inputSchema))
        for tool in listed
    ]
    connections = {name: {"transport": "stdio", "command": "unused"} for name in ("clock", "calc")}
    return ToolHub(connections, described={"clock": clock, "calc": [ADD]})


async def test_arguments_move_to_the_tool_whose_schema_they_fit() -> None:
    hub = await described_hub()
    shift = hub.specs["clock.shift_date"]
    reach = task_reach(hub, shift, ["clock.now"])
    assert [spec.name for spec in reach] == ["clock.now", "clock.convert_time", "clock.date_diff"]

    def moved(args: dict[str, object]) -> Binding | None:
        return rebind(args, shift, reach, args_model)

    dates = {"start": "2024-03-01", "end": "2024-12-25"}
    assert moved(dates) == Binding(hub.specs["clock.date_diff"], dates)
    assert moved({"start_date": "2024-03-01", "end_date": "2024-12-25"}) == Binding(
        hub.specs["clock.date_diff"], dates
    ), "names that hold the property's words, one to one"
    assert moved({"date": "2024-03-01", "days": 30}) is None, "they fit the bound tool"
    renamed = moved({"startDate": "2024-03-01", "days": 30})  # the bound tool's own names
    assert renamed is not None and renamed.spec is shift
    assert renamed.args == {"date": "2024-03-01", "days": 30, "weeks": 0, "months": 0, "years": 0}
    assert moved({"start": "2024-03-01", "start_date": "2024-12-25"}) is None, "two names on one property"
    assert moved({"when": "2024-03-01"}) is None, "clock.now takes no argument it does not name"
    assert moved({}) is None
    # the run's candidates reach across servers
    across = task_reach(hub, shift, ["calc.add"])
    assert rebind({"a": 2, "b": "3"}, shift, across, args_model) == Binding(ADD, {"a": 2, "b": 3})


def test_the_payload_carries_the_runs_candidates() -> None:
    task = Task(id="t1", goal="Count the days", tool="clock.shift_date")
    payload = task_payload(
        task, {}, query=QUERY, today="2026-11-22", plan_version=1, tool_calls_left=4, deadline=0.0,
        candidates=CANDIDATES,
    )  # fmt: skip
    assert payload["candidates"] == CANDIDATES


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clock_hub() -> AsyncIterator[ToolHub]:
    """The real clock server over stdio, its time pinned."""
    async with ToolHub.open({"clock": server_connections(with_facts=False)["clock"]}) as hub:
        yield hub


def payload(task: Task) -> TaskPayload:
    """The task's payload as the dispatcher sends it, with this query's candidate tools."""
    return task_payload(
        task, {}, query=QUERY, today="2026-11-22", plan_version=1, tool_calls_left=6,
        deadline=time.time() + 60, candidates=CANDIDATES,
    )  # fmt: skip


def days_judge(prompt: str) -> dict[str, object]:
    """The Master's verdict: enough when the output counts the days."""
    return {"sufficient": "299 days" in prompt, "result": "299 days" if "299 days" in prompt else ""}


@pytest.mark.asyncio(loop_scope="module")
async def test_the_executors_arguments_for_another_tool_call_that_tool(clock_hub: ToolHub) -> None:
    team = Team()
    team["executor"].on(EXEC_ARGS, {"start_date": "2024-03-01", "end_date": "2024-12-25"})
    team["master"].on(EXEC_JUDGE, days_judge)
    task = Task(id="t1", goal=QUERY, tool="clock.shift_date")

    outcome = await run_tool_task(team.resources(clock_hub), task, payload(task))

    assert outcome.status == "ok" and outcome.output == "299 days", outcome.error
    assert [(call.tool, call.args, call.ok) for call in outcome.calls] == [
        ("clock.date_diff", {"start": "2024-03-01", "end": "2024-12-25"}, True)
    ]
    (switch,) = outcome.switches
    assert (switch["from_tool"], switch["to_tool"]) == ("clock.shift_date", "clock.date_diff")
    assert len(team["executor"].calls) == 1, "no repair round for arguments another tool takes"


@pytest.mark.asyncio(loop_scope="module")
async def test_the_judges_retry_arguments_for_another_tool_call_that_tool(clock_hub: ToolHub) -> None:
    team = Team()
    team["executor"].on(EXEC_ARGS, {"date": "2024-03-01", "days": 0, "weeks": 0, "months": 0, "years": 0})
    team["master"].on(
        lambda p: EXEC_JUDGE in p and "299 days" not in p,
        {"sufficient": False, "result": "", "retry_args": {"start": "2024-03-01", "end": "2024-12-25"}},
    )
    team["master"].on(EXEC_JUDGE, days_judge)
    task = Task(id="t1", goal=QUERY, tool="clock.shift_date")
    run = team.resources(clock_hub, make_settings(tool_backups=0))

    outcome = await run_tool_task(run, task, payload(task))

    assert outcome.status == "ok" and outcome.output == "299 days", outcome.error
    assert [(call.tool, call.ok) for call in outcome.calls] == [
        ("clock.shift_date", True),
        ("clock.date_diff", True),
    ], "shift_date is never called with a date difference's arguments"
