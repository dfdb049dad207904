"""``aisearch tools add|remove``: the user's mcpServers file, edited safely, checked against a real
MCP server over stdio, and read by every later run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.settings import load_settings
from tests.conftest import REPO
from tests.test_cli import cli_env
from tools.catalog.listings import cached_listing
from tools.mcp_file import add_servers, remove_server
from tools.registry import ServerConfigError, load_connections, normalize_entry

ENV_SERVER = str(REPO / "tests" / "servers" / "env_server.py")


def tools_cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "tools", *args],
        env=cli_env("http://127.0.0.1:9/v1", tmp_path),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_file_keeps_its_other_entries_and_refuses_bad_or_duplicate_ones(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"note": "mine", "mcpServers": {"web": {"url": "http://127.0.0.1:1/mcp"}}}))
    add_servers(path, {"env": {"command": "python", "args": ["s.py"], "env": {"A": "1"}}})
    document = json.loads(path.read_text())
    assert document["note"] == "mine" and set(document["mcpServers"]) == {"web", "env"}

    before = path.read_text()
    with pytest.raises(ServerConfigError, match="already"):
        add_servers(path, {"web": {"url": "http://127.0.0.1:2/mcp"}})
    with pytest.raises(ServerConfigError, match="needs either 'command'"):
        add_servers(path, {"odd": {"args": []}})
    with pytest.raises(ServerConfigError, match="no dots"):
        add_servers(path, {"a.b": {"command": "x"}})
    assert path.read_text() == before, "a refused change writes nothing"

    add_servers(path, {"web": {"url": "http://127.0.0.1:2/mcp"}}, replace=True)
    assert json.loads(path.read_text())["mcpServers"]["web"]["url"].endswith(":2/mcp")
    assert "removed 'env'" in remove_server(path, "env")
    assert "disabled the bundled server 'clock'" in remove_server(path, "clock")
    assert "clock" not in load_connections(path) and "web" in load_connections(path)
    with pytest.raises(ServerConfigError, match="no server 'nope'"):
        remove_server(path, "nope")


def test_a_run_reads_the_user_file_beside_the_config_unless_one_is_set(tmp_path: Path) -> None:
    (tmp_path / "config.toml").touch()
    env = {"AISEARCH_CONFIG": str(tmp_path / "config.toml")}
    assert load_settings(env=env).mcp_config is None
    (tmp_path / "mcp.json").write_text('{"mcpServers": {}}')
    assert load_settings(env=env).mcp_config == tmp_path / "mcp.json"
    other = tmp_path / "other.json"
    assert load_settings(env={**env, "AISEARCH_MCP_CONFIG": str(other)}).mcp_config == other


@pytest.mark.slow
def test_add_starts_the_server_lists_its_tools_and_later_runs_see_it(tmp_path: Path) -> None:
    added = tools_cli(
        "add", "envdump", "--env", "GREETING=hi", "--", sys.executable, ENV_SERVER, tmp_path=tmp_path
    )
    assert added.returncode == 0, added.stderr
    assert "added 'envdump'" in added.stdout and "1 tools (environment)" in added.stdout
    entry = json.loads((tmp_path / "mcp.json").read_text())["mcpServers"]["envdump"]
    assert entry == {"command": sys.executable, "args": [ENV_SERVER], "env": {"GREETING": "hi"}}
    listing = cached_listing("envdump", normalize_entry("envdump", entry), tmp_path / "tools")
    assert listing is not None and [t.name for t in listing.tools] == ["environment"], (
        "the listing is kept: runs start the server only when a plan selects it"
    )

    listed = tools_cli("list", "--json", tmp_path=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "envdump" in {row["server"] for row in json.loads(listed.stdout)}

    broken = tools_cli("add", "broken", "--", sys.executable, "-c", "raise SystemExit(3)", tmp_path=tmp_path)
    assert broken.returncode == 1 and "did not start" in broken.stderr and "Traceback" not in broken.stderr
    assert "broken" not in json.loads((tmp_path / "mcp.json").read_text())["mcpServers"]

    unchecked = tools_cli("add", "later", "--no-check", "--url", "http://127.0.0.1:9/mcp", tmp_path=tmp_path)
    assert unchecked.returncode == 0 and "not started" in unchecked.stdout

    removed = tools_cli("remove", "envdump", tmp_path=tmp_path)
    assert removed.returncode == 0 and "removed 'envdump'" in removed.stdout
    assert tools_cli("remove", "envdump", tmp_path=tmp_path).returncode == 1
    both = tools_cli("add", "x", "--url", "http://h/mcp", "--", "python", tmp_path=tmp_path)
    assert both.returncode == 1 and "one of them" in both.stderr
