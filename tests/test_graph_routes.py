"""The paper's three examples route as seed 001 §2 says, end to end, with real MCP servers."""

from __future__ import annotations

import pytest

from tests.conftest import Team, run
from tests.support.fakes import EXEC_ARGS, EXEC_COMPUTE, EXEC_JUDGE, MASTER, PLANNER, WRITER, assessment


async def test_simple_question_goes_writer_only(team: Team, hub) -> None:
    query = "What is the name of Emperor Han-Wu?"
    team["master"].on(MASTER, assessment("simple", resolved=query))
    team["writer"].on(WRITER, "The name of Emperor Han-Wu is Liu Che.")

    state, path, _ = await run(team.resources(hub), query)

    assert path == ["master", "writer"]
    assert state["route"] == "writer_only"
    assert state["answer"]["text"] == "The name of Emperor Han-Wu is Liu Che."
    assert state["answer"]["basis"] == "model_knowledge"
    assert not state["results"] and not team["executor"].calls and not team["planner"].calls


@pytest.mark.slow
async def test_time_question_goes_executor_inclusive_with_the_clock(team: Team, hub) -> None:
    query = "What time is it in Tokyo now?"
    team["master"].on(MASTER, assessment("moderate", resolved=query, intent="current time in a timezone"))
    team["executor"].on(EXEC_ARGS, {"timezone": "Asia/Tokyo"})
    team["master"].on(EXEC_JUDGE, {"sufficient": True, "result": "18:00 in Tokyo", "retry_args": None})
    team["writer"].on(WRITER, "It is 18:00 (6 pm) in Tokyo now [1].")

    state, path, _ = await run(team.resources(hub), query)

    assert path == ["master", "select_tools", "dispatch", "execute_task", "review", "writer"]
    assert state["route"] == "executor"
    assert state["candidate_tools"][0]["name"] == "clock.now"
    (result,) = state["results"].values()
    assert result["tool"] == "clock.now" and result["status"] == "ok"
    (call,) = result["tool_calls"]
    assert call["args"] == {"timezone": "Asia/Tokyo"} and call["ok"]
    assert "18:00" in call["output"]  # the real clock server, time fixed at 09:00 UTC
    (citation,) = state["answer"]["citations"]
    assert citation["evidence_id"] == result["evidence_ids"][0]
    assert citation["kind"] == "tool"


@pytest.mark.slow
async def test_comparison_goes_planner_enhanced_with_a_parallel_wave(hub) -> None:
    team = Team(delay_s=0.3)
    query = "Who is elder, Emperor Han-Wu or Emperor Caesar, by how many years?"
    team["master"].on(MASTER, assessment("complex", "parallel", resolved=query))
    team["planner"].on(
        PLANNER,
        {
            "reasoning": "Two independent birth years, then a subtraction.",
            "tasks": [
                {
                    "id": "t1",
                    "goal": "Find the birth year (BC) of Emperor Wu of Han",
                    "tool": None,
                    "deps": [],
                },
                {"id": "t2", "goal": "Find the birth year (BC) of Julius Caesar", "tool": None, "deps": []},
                {
                    "id": "t3",
                    "goal": "Compute how many years apart they were born",
                    "tool": "python.calculate",
                    "args": {"expression": "{{t1}} - {{t2}}"},
                    "deps": ["t1", "t2"],
                },
            ],
        },
    )
    team["executor"].on(lambda p: EXEC_COMPUTE in p and "Wu of Han" in p, {"result": "156", "complete": True})
    team["executor"].on(lambda p: EXEC_COMPUTE in p and "Caesar" in p, {"result": "100", "complete": True})
    team["master"].on(
        EXEC_JUDGE, lambda p: {"sufficient": True, "result": p.split("Tool output:\n")[1].split("\n")[0]}
    )
    team["writer"].on(
        WRITER,
        "Emperor Wu of Han was born in 156 BC [1] and Julius Caesar in 100 BC [2]. "
        "Emperor Wu was therefore older, by 56 years [3].",
    )

    state, path, _ = await run(team.resources(hub), query)

    assert path == [
        "master",
        "select_tools",
        "plan",
        "dispatch",
        "execute_task",
        "execute_task",
        "review",
        "dispatch",
        "execute_task",
        "review",
        "writer",
    ]
    assert state["route"] == "planner"
    results = state["results"]
    assert [results[t]["status"] for t in ("t1", "t2", "t3")] == ["ok", "ok", "ok"]
    t1, t2 = results["t1"], results["t2"]
    assert t1["started_at"] < t2["finished_at"] and t2["started_at"] < t1["finished_at"], "t1 and t2 overlap"
    assert results["t3"]["started_at"] >= max(t1["finished_at"], t2["finished_at"])
    (call,) = results["t3"]["tool_calls"]
    assert call["args"] == {"expression": "156 - 100"}  # parents' outputs substituted
    assert call["output"].strip() == "56"  # computed by the real python MCP server
    cited = {c["evidence_id"] for c in state["answer"]["citations"]}
    assert set(t1["evidence_ids"]) <= cited and set(t2["evidence_ids"]) <= cited
    assert state["answer"]["model_knowledge_citations"] == [1, 2]
