"""The "clock" MCP server over stdio and streamable HTTP (real subprocesses), with a pinned clock."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

from agents.plan_grounding import misfit_arguments
from core.plan import Task
from tests.support.processes import stop_process
from tools.servers.clock_server import date_diff, mcp, resolve_timezone, shift_date

REPO_ROOT = Path(__file__).resolve().parents[1]
PINNED_NOW = "2026-11-22T09:00:00+00:00"  # a Sunday


@pytest.fixture
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AISEARCH_CLOCK_NOW", PINNED_NOW)


def _env() -> dict[str, str]:
    return {**os.environ, "AISEARCH_CLOCK_NOW": PINNED_NOW}


def _stdio_client() -> MultiServerMCPClient:
    return MultiServerMCPClient(
        {
            "clock": {
                "command": sys.executable,
                "args": ["-m", "tools.servers.clock_server"],
                "transport": "stdio",
                "cwd": str(REPO_ROOT),
                "env": _env(),
            }
        }
    )


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block.get("type") == "text")


@pytest.mark.slow
async def test_clock_tools_over_stdio() -> None:
    async with _stdio_client().session("clock") as session:
        tools = {tool.name: tool for tool in await load_mcp_tools(session)}
        assert set(tools) == {"now", "convert_time", "shift_date", "date_diff"}
        assert "What time is it in Tokyo now?" in tools["now"].description
        assert "What date is 30 days after 2026-11-22?" in tools["shift_date"].description
        assert set(tools["shift_date"].args) == {"date", "days", "weeks", "months", "years"}

        tokyo = _text(await tools["now"].ainvoke({"timezone": "Tokyo"}))
        assert tokyo == "2026-11-22T18:00:00+09:00 (Sunday) in Asia/Tokyo (JST, UTC+09:00)"
        utc = _text(await tools["now"].ainvoke({}))
        assert utc.startswith("2026-11-22T09:00:00+00:00 (Sunday) in UTC")

        converted = _text(
            await tools["convert_time"].ainvoke(
                {"time": "2026-11-22 15:30", "from_timezone": "Beijing", "to_timezone": "Paris"}
            )
        )
        assert "2026-11-22T15:30:00+08:00" in converted
        assert "= 2026-11-22T08:30:00+01:00 (Sunday) in Europe/Paris" in converted

        shifted = _text(await tools["shift_date"].ainvoke({"date": "2026-11-22", "days": 30}))
        assert shifted.endswith("= 2026-12-22 (Tuesday)")
        diff = _text(await tools["date_diff"].ainvoke({"start": "2026-01-01", "end": "today"}))
        assert "325 days" in diff and "10 months, 21 days" in diff

        result = await session.call_tool("now", {"timezone": "Atlantis"})
        assert result.isError
        assert "unknown time zone 'Atlantis'" in result.content[0].text
        assert "Asia/Tokyo" in result.content[0].text  # tells how to name one
        result = await session.call_tool("shift_date", {"date": "next blursday", "days": 1})
        assert result.isError and "could not read the date" in result.content[0].text


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"clock server exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"clock server did not accept connections on port {port}")


@pytest.mark.slow
async def test_clock_over_streamable_http() -> None:
    port = _free_port()
    cmd = [sys.executable, "-m", "tools.servers.clock_server", "--transport", "streamable-http"]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port)],
        cwd=REPO_ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, proc)
        client = MultiServerMCPClient(
            {"clock": {"transport": "streamable_http", "url": f"http://127.0.0.1:{port}/mcp"}}
        )
        async with client.session("clock") as session:
            result = await session.call_tool("now", {"timezone": "New York"})
        assert not result.isError
        assert (
            result.content[0].text
            == "2026-11-22T04:00:00-05:00 (Sunday) in America/New_York (EST, UTC-05:00)"
        )
    finally:
        stop_process(proc)


@pytest.mark.parametrize(
    ("name", "zone"),
    [
        ("Tokyo", "Asia/Tokyo"),
        ("beijing", "Asia/Shanghai"),
        ("New York", "America/New_York"),
        ("london", "Europe/London"),
        ("Paris", "Europe/Paris"),
        ("India", "Asia/Kolkata"),
        ("asia/tokyo", "Asia/Tokyo"),
        ("Hong Kong", "Asia/Hong_Kong"),
        ("UTC+8", "UTC+08:00"),
        ("GMT-05:30", "UTC-05:30"),
    ],
)
def test_resolve_timezone(name: str, zone: str) -> None:
    assert resolve_timezone(name)[1] == zone


def test_date_arithmetic(pinned_clock: None) -> None:
    assert shift_date("2024-01-31", months=1).endswith("= 2024-02-29 (Thursday)")
    assert shift_date("today", weeks=-6).endswith("= 2026-10-11 (Sunday)")
    assert shift_date("tomorrow").startswith("2026-11-23 (Monday)")
    assert shift_date("2026-11-22 09:24 UTC", days=1).endswith(
        "= 2026-11-23 (Monday)"
    )  # a model-written date-time
    assert "-325 days" in date_diff("2026-11-22", "2026-01-01")
    assert "0 years, 1 month, 1 day" in date_diff("2024-01-31", "2024-03-01")
    # a year alone is its first day, and the result says so: a difference in whole years
    assert date_diff("1966", "1980").startswith("5113 days from 1966-01-01 (Saturday) to 1980-01-01")
    assert "or 14 years, 0 months, 0 days" in date_diff("1966", "1980")
    with pytest.raises(ValueError, match="outside the supported years"):
        shift_date("9999-12-31", days=1)


async def test_a_date_arguments_schema_tells_a_planner_a_title_is_no_date() -> None:
    schemas = {f"clock.{tool.name}": tool.inputSchema for tool in await mcp.list_tools()}
    title = Task(id="t2", goal="g", tool="clock.date_diff", args={"start": "1966-01-01", "end": "Poleconomy"})
    dated = Task(id="t3", goal="g", tool="clock.shift_date", args={"date": "today", "days": 3})

    assert [p.split(" does not fit")[0] for p in misfit_arguments([title, dated], schemas)] == [
        "task t2: argument 'end' = \"Poleconomy\""
    ]
