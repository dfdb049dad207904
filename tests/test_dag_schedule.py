"""The plan's schedule, read from timestamps: a wave's tasks overlap, ``max_parallel = 1`` runs them
strictly one at a time, and a task of a plan still being streamed starts before the plan is complete.

Real stdio MCP servers (``tests/servers/sleepy_server.py``, whose lookups sleep and report when
they ran on the server's clock, and the bundled python server), scripted models.
"""

from __future__ import annotations

import json

import pytest

from agents.plan_stream import TaskStream
from core.state import TaskResult
from tests.conftest import Team, make_settings, run
from tests.support.fakes import StreamingScriptedChatModel
from tests.support.sleepy_plan import QUERY, scripted
from tools.hub import ToolHub

Interval = tuple[float, float]


def task_interval(result: TaskResult) -> Interval:
    return result["started_at"], result["finished_at"]


def server_interval(result: TaskResult) -> Interval:
    """When the lookup ran on the sleepy server's clock."""
    reported = json.loads(result["tool_calls"][0]["output"])
    return reported["started"], reported["finished"]


def overlap(a: Interval, b: Interval) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.parametrize("max_parallel", [4, 1])
@pytest.mark.slow
async def test_a_wave_overlaps_and_one_task_at_a_time_never_does(
    sleepy_hub: ToolHub, max_parallel: int
) -> None:
    team = scripted(Team(), seconds=0.5)
    settings = make_settings(max_parallel=max_parallel)

    state, path, _ = await run(team.resources(sleepy_hub, settings), QUERY)

    results = state["results"]
    assert [results[t]["status"] for t in ("t1", "t2", "t3")] == ["ok", "ok", "ok"]
    assert results["t3"]["tool_calls"][0]["output"].strip() == "56"  # 156 - 100 on the python server
    t1, t2, t3 = (results[t] for t in ("t1", "t2", "t3"))
    assert task_interval(t3)[0] >= max(t1["finished_at"], t2["finished_at"])
    parallel = max_parallel > 1
    assert overlap(task_interval(t1), task_interval(t2)) is parallel
    assert overlap(server_interval(t1), server_interval(t2)) is parallel  # the sleeps themselves
    assert path.count("dispatch") == (2 if parallel else 3)


def test_the_task_stream_yields_each_task_when_its_closing_brace_arrives() -> None:
    reply = json.dumps(
        {
            "reasoning": 'Not {"tasks": [{"id": "x"}]} but two lookups.',
            "tasks": [
                {"id": "t1", "goal": 'a {brace} and a "quote"', "args": {"q": "[x]"}, "deps": []},
                {"id": "t2", "goal": "b", "args": {}, "deps": ["t1"]},
            ],
        }
    )
    stream = TaskStream()
    seen: list[tuple[int, str]] = []
    for end in range(1, len(reply) + 1):
        seen += [(end, task["id"]) for task in stream.feed(reply[:end])]

    first_close = reply.index('"deps": []}') + len('"deps": []}')
    assert seen == [(first_close, "t1"), (len(reply) - 2, "t2")]  # t2 closes just before "]}"


@pytest.mark.slow
async def test_a_task_of_a_plan_still_being_written_starts_before_the_plan_is_complete(
    sleepy_hub: ToolHub,
) -> None:
    team = Team()
    planner = StreamingScriptedChatModel(name_="planner", chunk_chars=4, chunk_delay_s=0.01)
    team.models["planner"] = planner
    scripted(team, seconds=1.0)
    settings = make_settings(max_parallel=1)

    state, path, _ = await run(team.resources(sleepy_hub, settings), QUERY)

    (plan_call,) = planner.calls
    results = state["results"]
    t1, t2, t3 = (results[t] for t in ("t1", "t2", "t3"))
    assert [r["status"] for r in (t1, t2, t3)] == ["ok", "ok", "ok"]
    assert t1["started_at"] < plan_call.finished  # started while the planner was still writing
    assert server_interval(t1)[0] < plan_call.finished  # the lookup itself was already running
    assert t2["started_at"] >= t1["finished_at"]  # max_parallel = 1 holds for streamed tasks too
    assert t3["started_at"] >= t2["finished_at"]  # a task starts only once its dependencies are done
    assert path[:4] == ["master", "select_tools", "plan", "review"]  # the streamed wave is reviewed
    early = [tid for tid, r in results.items() if r["started_at"] < plan_call.finished]
    assert path.count("execute_task") == 3 - len(early)  # every task ran exactly once
    assert [entry["mode"] for entry in state["plan_log"]] == ["plan"]
