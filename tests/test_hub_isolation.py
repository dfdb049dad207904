"""Fault injection with real misbehaving MCP servers over stdio: each server's failure is its own.

Every test starts ``tests/servers/misbehaving_server.py`` with a unique marker in its command line
and checks, after the hub closes, that no such process is left.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agents.executor import args_model, tool_args
from tests.conftest import REPO, Team, facts_connection, make_settings, run
from tests.servers.misbehaving_server import ODD_NAMES
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, PLANNER, WRITER, assessment
from tests.support.processes import processes_with
from tools.hub import ToolHub
from tools.session import ServerLimits

SERVER = str(REPO / "tests" / "servers" / "misbehaving_server.py")
FAST = ServerLimits(start_timeout_s=10, probe_timeout_s=0.5, close_timeout_s=5)


@pytest.fixture
def marker() -> Iterator[str]:
    """A token in the command line of this test's servers; none of them may outlive the test."""
    token = f"marker-{uuid.uuid4().hex}"
    yield token
    deadline = time.monotonic() + 5
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(token) == [], "a server process was left behind"


def misbehaving(marker: str, mode: str = "ok", **extra: Any) -> dict[str, Any]:
    """A stdio connection to the misbehaving server in start-up ``mode``."""
    return {
        "transport": "stdio",
        "command": sys.executable,
        "args": [SERVER, mode, marker],
        "env": dict(os.environ),
        **extra,
    }


async def test_invalid_utf8_on_stdout_is_tolerated_and_the_other_servers_keep_working(marker: str) -> None:
    async with ToolHub.open({"bad": misbehaving(marker), "facts": facts_connection()}, limits=FAST) as hub:
        after_garbage = await hub.call("bad.garbage", {}, timeout_s=5)
        assert after_garbage.ok and after_garbage.output == "after garbage"
        assert (await hub.call("facts.biography", {"person": "Caesar"}, timeout_s=5)).ok
        assert (await hub.call("bad.echo", {"text": "hi"}, timeout_s=5)).output == "hi"


@pytest.mark.slow
async def test_a_transport_failure_downs_that_server_alone_and_it_is_restarted(marker: str) -> None:
    strict = misbehaving(marker, encoding_error_handler="strict")  # invalid UTF-8 breaks the transport
    async with ToolHub.open({"bad": strict, "facts": facts_connection()}, limits=FAST) as hub:
        broken = await hub.call("bad.garbage", {}, timeout_s=3)
        assert not broken.ok and broken.error.startswith("tool bad.garbage ")
        assert (await hub.call("facts.biography", {"person": "Caesar"}, timeout_s=5)).ok
        assert (await hub.call("bad.echo", {"text": "back"}, timeout_s=10)).output == "back"
        assert hub.servers["bad"].restarts == 1


async def test_invalid_utf8_while_the_hub_starts_does_not_hang_it(marker: str) -> None:
    strict = misbehaving(marker, "garbage-later", encoding_error_handler="strict")
    async with asyncio.timeout(15):  # before the fix: the session owner died and open() never returned
        async with ToolHub.open({"bad": strict, "facts": facts_connection()}, limits=FAST) as hub:
            assert (await hub.call("facts.biography", {"person": "Caesar"}, timeout_s=5)).ok


@pytest.mark.slow
async def test_servers_start_concurrently_each_within_its_own_timeout(marker: str) -> None:
    connections = {
        "hung1": misbehaving(marker, "hang-at-start"),
        "hung2": misbehaving(marker, "hang-at-start"),
        "hung3": misbehaving(marker, "hang-at-start"),
        "exits": misbehaving(marker, "exit-at-start"),
        "facts": facts_connection(),
    }
    started = time.monotonic()
    async with ToolHub.open(connections, limits=ServerLimits(start_timeout_s=5)) as hub:
        elapsed = time.monotonic() - started
        assert elapsed < 10, f"one after another would take 15 s or more, took {elapsed:.1f} s"
        assert set(hub.server_errors) == {"hung1", "hung2", "hung3", "exits"}
        assert hub.server_errors["hung1"] == "did not start within 5 s"
        assert hub.server_errors["exits"].startswith("did not start: ")
        assert (await hub.call("facts.biography", {"person": "Caesar"}, timeout_s=5)).ok
        down = await hub.call("hung1.echo", {"text": "x"}, timeout_s=1)
        assert not down.ok and "unknown tool" in down.error  # it never listed its tools


@pytest.mark.slow
async def test_a_stuck_tool_does_not_block_its_servers_later_calls(marker: str) -> None:
    async with ToolHub.open({"bad": misbehaving(marker)}, limits=FAST) as hub:
        stuck = await hub.call("bad.hang", {}, timeout_s=0.5)
        assert not stuck.ok and stuck.error == "tool bad.hang timed out after 0.5 s"
        later = await hub.call("bad.echo", {"text": "still here"}, timeout_s=10)
        assert later.ok and later.output == "still here"
        assert hub.servers["bad"].restarts == 1  # the ping went unanswered: restarted


async def test_a_slow_tool_on_a_healthy_server_is_not_restarted() -> None:
    async with ToolHub.open({"facts": facts_connection()}, limits=FAST) as hub:
        slow = await hub.call("facts.search", {"query": "Caesar", "k": 1}, timeout_s=0.000001)
        assert not slow.ok and "timed out" in slow.error
        assert (await hub.call("facts.biography", {"person": "Caesar"}, timeout_s=5)).ok
        assert hub.servers["facts"].restarts == 0


@pytest.mark.slow
async def test_a_server_that_keeps_crashing_is_given_up_and_reported(marker: str) -> None:
    limits = ServerLimits(start_timeout_s=10, probe_timeout_s=0.5, max_restarts=1)
    async with ToolHub.open({"bad": misbehaving(marker), "facts": facts_connection()}, limits=limits) as hub:
        assert not (await hub.call("bad.crash", {}, timeout_s=5)).ok
        assert (await hub.call("bad.echo", {"text": "restarted"}, timeout_s=10)).ok
        assert not (await hub.call("bad.crash", {}, timeout_s=5)).ok
        gone = await hub.call("bad.echo", {"text": "again"}, timeout_s=10)
        assert not gone.ok and gone.error.startswith("tool bad.echo unavailable: MCP server bad ")
        assert "given up after 1 restart(s)" in gone.error
        assert "bad" in hub.server_errors
        assert (await hub.call("facts.biography", {"person": "Caesar"}, timeout_s=5)).ok


async def test_list_valued_types_in_a_tool_schema_are_normalised(marker: str) -> None:
    async with ToolHub.open({"bad": misbehaving(marker)}, limits=FAST) as hub:
        spec = hub.specs["bad.echo"]
        assert spec.brief()["args"] == {"text": "string|null", "times": "integer|string", "loud": "any"}
        model = args_model(spec)  # raised TypeError (unhashable list) before
        assert tool_args(model.model_validate({"text": None})) == {"times": 1}
        assert tool_args(model.model_validate({"text": "a", "times": 2, "loud": [1]}))["loud"] == [1]
        with pytest.raises(ValueError):
            model.model_validate({"text": 3})
        assert (await hub.call("bad.echo", {"text": "ab", "times": 2}, timeout_s=5)).output == "ab ab"


async def test_any_property_name_validates_and_reaches_the_tool_under_its_own_name(marker: str) -> None:
    """Keywords, dashes, spaces, a leading underscore and Pydantic's own members are all argument names."""
    odd = {name: name.upper() for name in ODD_NAMES}
    async with ToolHub.open({"bad": misbehaving(marker)}, limits=FAST) as hub:
        model = args_model(hub.specs["bad.fields"])  # raised before (model_dump: a protected member)
        schema = model.model_json_schema()
        assert list(schema["properties"]) == list(ODD_NAMES) and schema["required"] == ["model_dump", "_id"]
        assert tool_args(model.model_validate(odd)) == odd  # "_id" was dropped before
        with pytest.raises(ValueError):
            model.model_validate({"model_dump": "x"})  # "_id" is required
        outcome = await hub.call("bad.fields", tool_args(model.model_validate(odd)), timeout_s=5)
        assert json.loads(outcome.output) == odd


async def test_a_run_calls_a_tool_whose_arguments_are_named_like_pydantic_members(marker: str) -> None:
    """The plan's own arguments and the arguments the executor writes both reach the tool intact."""
    odd = {name: name.upper() for name in ODD_NAMES}
    team = Team()
    query = "Send the fields twice"
    team["master"].on(MASTER, assessment("complex", resolved=query))
    plan = {
        "reasoning": "call it with the plan's arguments, then with written ones",
        "tasks": [
            {"id": "t1", "goal": "Send the fields", "tool": "bad.fields", "args": odd},
            {"id": "t2", "goal": "Send the fields again", "tool": "bad.fields", "deps": ["t1"]},
        ],
    }
    team["planner"].on(PLANNER, plan)
    team["executor"].on(EXEC_ARGS, odd)
    team["master"].on(EXEC_JUDGE, {"sufficient": True, "result": "sent"})
    team["writer"].on(WRITER, "Sent [1].")
    settings = make_settings(max_replans=0, max_executor_rounds=1)

    async with ToolHub.open({"bad": misbehaving(marker)}, limits=FAST) as hub:
        state, _, _ = await run(team.resources(hub, settings), query)

    for task_id in ("t1", "t2"):
        (call,) = state["results"][task_id]["tool_calls"]
        assert call["ok"] and call["args"] == odd and json.loads(call["output"]) == odd


@pytest.mark.slow
async def test_a_run_whose_tools_misbehave_ends_in_an_answer_that_says_what_failed(marker: str) -> None:
    """The planner binds a union-typed tool and a stuck one: the first works, the second fails as data."""
    team = Team()
    team["master"].on(MASTER, assessment("complex", resolved="Repeat ab twice, then wait for the archive"))
    plan = {
        "reasoning": "echo, then wait",
        "tasks": [
            {"id": "t1", "goal": "Repeat ab twice", "tool": "bad.echo"},
            {"id": "t2", "goal": "Wait for the archive", "tool": "bad.hang", "deps": ["t1"]},
        ],
    }
    team["planner"].on(PLANNER, plan)
    team["executor"].on(EXEC_ARGS, {"text": "ab", "times": 2})
    team["master"].on(
        EXEC_JUDGE, lambda p: {"sufficient": True, "result": p.split("Tool output:\n")[1].split("\n")[0]}
    )
    team["writer"].on(WRITER, "ab ab [1]; the wait could not be done.")
    settings = make_settings(max_replans=0, max_executor_rounds=1, tool_timeout_s=0.5)

    async with ToolHub.open({"bad": misbehaving(marker)}, limits=FAST) as hub:
        state, path, _ = await run(
            team.resources(hub, settings), "Repeat ab twice, then wait for the archive"
        )

    results = state["results"]
    assert results["t1"]["status"] == "ok" and results["t1"]["output"] == "ab ab"
    assert results["t2"]["status"] == "failed"
    assert results["t2"]["error"] == "tool bad.hang timed out after 0.5 s"
    assert any("Wait for the archive" in gap for gap in state["answer"]["missing"])
    assert path[-1] == "writer" and state["answer"]["text"]
