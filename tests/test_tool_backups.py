"""Backup tools in the Executor, end to end with real MCP servers behind the fault-injecting proxy."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agents.executor import args_model
from agents.executor_backup import failure_reason, name_mapped_args
from tests.conftest import FIXED_NOW, Team, make_settings, run
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, PLANNER, WRITER, assessment
from tools.hub import ToolHub, ToolOutcome, ToolSpec
from tools.registry import bundled_connections
from tools.servers.faults_server import proxy_connection

QUERY = "What is 17 * 23 + 4?"
PLAN = {
    "tasks": [
        {
            "id": "t1",
            "goal": "Compute 17 * 23 + 4",
            "tool": "python.calculate",
            "args": {"expression": "17 * 23 + 4"},
        }
    ]
}


def _connections(mode: str, tools: list[str]) -> dict[str, dict[str, Any]]:
    clock = bundled_connections()["clock"]
    clock["env"] = {**clock["env"], "AISEARCH_CLOCK_NOW": FIXED_NOW}
    return {"python": proxy_connection("python", tools, rate=1.0, mode=mode, hang_s=30), "clock": clock}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def failing_hub() -> AsyncIterator[ToolHub]:
    """python.calculate always fails; its peer calculate_precise works."""
    async with ToolHub.open(_connections("fail", ["calculate"])) as hub:
        yield hub


def _team() -> Team:
    team = Team()
    team["master"].on(MASTER, assessment("complex", resolved=QUERY))
    team["planner"].on(PLANNER, PLAN)
    team["master"].on(
        EXEC_JUDGE, lambda p: {"sufficient": True, "result": p.split("Tool output:\n")[1].split("\n")[0]}
    )
    team["writer"].on(WRITER, "17 * 23 + 4 is 395 [1].")
    return team


@pytest.mark.asyncio(loop_scope="module")
async def test_a_failing_tool_falls_back_to_its_peer_and_the_answer_cites_it(failing_hub: ToolHub) -> None:
    team = _team()

    state, _, _ = await run(team.resources(failing_hub), QUERY)

    result = state["results"]["t1"]
    assert result["status"] == "ok" and result["output"] == "395"
    calls = [(call["tool"], call["ok"]) for call in result["tool_calls"]]
    assert calls == [
        ("python.calculate", False),
        ("python.calculate", False),
        ("python.calculate_precise", True),
    ]
    (switch,) = result["switches"]
    assert switch["from_tool"] == "python.calculate" and switch["to_tool"] == "python.calculate_precise"
    assert switch["mapped_by"] == "name" and switch["args"] == {"expression": "17 * 23 + 4"}
    assert "injected failure" in switch["reason"]
    (citation,) = state["answer"]["citations"]
    evidence = state["evidence"][citation["evidence_id"]]
    assert citation["evidence_id"] in result["evidence_ids"] and "395" in evidence["content"]


@pytest.mark.asyncio(loop_scope="module")
async def test_without_backups_the_failure_reaches_the_master(failing_hub: ToolHub) -> None:
    team = _team()
    settings = make_settings(tool_backups=0, tool_retries=0, max_replans=0, max_executor_rounds=1)

    state, _, _ = await run(team.resources(failing_hub, settings), QUERY)

    result = state["results"]["t1"]
    assert result["status"] == "failed" and "switches" not in result
    assert [call["tool"] for call in result["tool_calls"]] == ["python.calculate"]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_failed_call_written_again_ends_the_task_instead_of_repeating(failing_hub: ToolHub) -> None:
    team = _team()
    # asked for different arguments after the failure, the small executor writes the same ones
    team["executor"].on(EXEC_ARGS, {"expression": "17 * 23 + 4"})
    settings = make_settings(tool_backups=0, tool_retries=0, max_replans=0, max_executor_rounds=3)

    state, _, _ = await run(team.resources(failing_hub, settings), QUERY)

    result = state["results"]["t1"]
    assert result["status"] == "failed" and "injected failure" in (result["error"] or "")
    assert [call["args"] for call in result["tool_calls"]] == [{"expression": "17 * 23 + 4"}], (
        "the same failing call is not made again"
    )
    assert len([c for c in team["executor"].calls if EXEC_ARGS in c.prompt]) == 1


@pytest.mark.slow
async def test_a_hanging_tool_is_cut_off_and_its_backup_answers() -> None:
    team = _team()
    settings = make_settings(tool_timeout_s=1.5)
    async with ToolHub.open(_connections("hang", ["calculate"])) as hub:
        state, _, _ = await run(team.resources(hub, settings), QUERY)

    result = state["results"]["t1"]
    assert result["status"] == "ok" and result["output"] == "395"
    first, backup = result["tool_calls"]  # a timeout is not retried: the backup is tried at once
    assert "timed out after 1.5 s" in (first["error"] or "") and backup["tool"] == "python.calculate_precise"
    assert result["finished_at"] - result["started_at"] < 15


def test_empty_and_unreadable_results_count_as_failures() -> None:
    assert failure_reason(ToolOutcome("t", {}, True, "  ")) == "the tool returned an empty result"
    assert "unreadable" in (failure_reason(ToolOutcome("t", {}, True, "\x00\x1b\ufffd\x07ab")) or "")
    assert failure_reason(ToolOutcome("t", {}, True, "395")) is None
    assert failure_reason(ToolOutcome("t", {}, False, "", "boom")) == "boom"


def test_arguments_map_by_name_or_the_single_text_argument() -> None:
    code = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
    target = ToolSpec("python.run_python", "python", "Run Python.", code)
    assert name_mapped_args({"expression": "1 + 1"}, target, args_model(target)) == {"code": "1 + 1"}
    two = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    target = ToolSpec("m.add", "m", "Add.", two)
    assert name_mapped_args({"expression": "1 + 1"}, target, args_model(target)) is None
    assert os.environ["AISEARCH_TOOLS_DIR"]  # toolkits are cached in the tests' own directory
