"""The MCP hub over real stdio servers: discovery, calls, and failures returned as data."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import facts_connection
from tools.hub import ToolHub
from tools.registry import ServerConfigError, bundled_connections, load_connections
from tools.session import ServerLimits


async def test_tools_are_discovered_once_and_called_through_long_lived_sessions() -> None:
    async with ToolHub.open({"facts": facts_connection()}) as hub:
        assert {"facts.birth_year", "facts.biography", "facts.slow", "facts.crash"} <= set(hub.specs)
        first = await hub.call("facts.birth_year", {"person": "Julius Caesar"}, timeout_s=10)
        second = await hub.call("birth_year", {"person": "Emperor Wu of Han"}, timeout_s=10)
        assert first.ok and "100 BC" in first.output
        assert second.ok and second.tool == "facts.birth_year"
        assert hub.specs["facts.birth_year"].parameters["required"] == ["person"]


@pytest.mark.slow
async def test_errors_timeouts_crashes_and_unknown_tools_come_back_as_data() -> None:
    limits = ServerLimits(probe_timeout_s=0.5)
    async with ToolHub.open({"facts": facts_connection(FACTS_FAIL_CAESAR="1")}, limits=limits) as hub:
        failed = await hub.call("facts.birth_year", {"person": "Caesar"}, timeout_s=10)
        assert not failed.ok and "unavailable for this person" in failed.error
        slow = await hub.call("facts.slow", {"seconds": 5}, timeout_s=0.5)
        assert not slow.ok and "timed out after 0.5 s" in slow.error
        unknown = await hub.call("web.search", {}, timeout_s=1)
        assert not unknown.ok and "unknown tool" in unknown.error
        crashed = await hub.call("facts.crash", {}, timeout_s=10)  # waits for the blocked server's restart
        assert not crashed.ok and "failed" in crashed.error
        after = await hub.call("facts.biography", {"person": "Caesar"}, timeout_s=10)
        assert after.ok, "a crashed (or stuck) server is restarted for the next call"
        assert hub.servers["facts"].restarts == 2  # the sleeping tool blocked it, then it crashed


async def test_a_server_that_cannot_start_is_reported_and_the_others_still_work() -> None:
    connections = {
        "broken": {"transport": "stdio", "command": sys.executable, "args": ["-c", "raise SystemExit(1)"]},
        "facts": facts_connection(),
    }
    async with ToolHub.open(connections) as hub:
        assert "broken" in hub.server_errors
        assert (await hub.call("facts.biography", {"person": "Caesar"}, timeout_s=5)).ok


def test_mcp_servers_json_adds_replaces_and_disables_servers(tmp_path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "weather": {"url": "http://127.0.0.1:9/mcp"},
                    "files": {"command": "npx", "args": ["-y", "server-files"], "env": {"ROOT": "/tmp"}},
                    "clock": {"disabled": True},
                }
            }
        )
    )
    connections = load_connections(path)
    assert set(connections) == {"python", "weather", "files"}
    assert connections["weather"] == {"transport": "streamable_http", "url": "http://127.0.0.1:9/mcp"}
    assert connections["files"]["env"]["ROOT"] == "/tmp" and connections["files"]["transport"] == "stdio"
    assert set(bundled_connections()) == {"python", "clock"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not valid JSON"),
        ('{"servers": {}}', "mcpServers"),
        ('{"mcpServers": {"x": {"args": []}}}', "needs either"),
    ],
)
def test_malformed_server_config_is_a_clear_error(tmp_path, content: str, message: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(content)
    with pytest.raises(ServerConfigError, match=message):
        load_connections(path)
    with pytest.raises(ServerConfigError, match="not found"):
        load_connections(tmp_path / "missing.json")


def test_docsearch_is_bundled_once_a_document_index_exists(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AISEARCH_INDEX_DIR", str(tmp_path))
    assert "docsearch" not in bundled_connections()
    (tmp_path / "collections" / "docs").mkdir(parents=True)
    (tmp_path / "collections" / "docs" / "state.json").write_text("{}")
    connection = bundled_connections()["docsearch"]
    assert connection["args"] == ["-m", "tools.servers.docsearch_server"]
    assert connection["env"]["AISEARCH_INDEX_DIR"] == str(tmp_path)
