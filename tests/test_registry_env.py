"""stdio MCP servers start with a clean environment: no aisearch setting or key unless configured."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from langchain_mcp_adapters.client import MultiServerMCPClient

from tools.registry import ServerConfigError, bundled_connections, bundled_env, load_connections

ENV_SERVER = Path(__file__).resolve().parent / "servers" / "env_server.py"
SECRETS = {
    "AISEARCH_API_KEY": "sk-all-roles",
    "AISEARCH_WRITER_API_KEY": "sk-writer",
    "AISEARCH_RERANK_API_KEY": "sk-rerank",
    "AISEARCH_BASE_URL": "https://api.example.com/v1",
    "GITHUB_TOKEN": "ghp-secret",
}


@pytest.fixture
def secrets(monkeypatch) -> None:
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AISEARCH_SANDBOX_NAMESPACES", "0")
    monkeypatch.setenv("AISEARCH_CLOCK_NOW", "2026-11-22T09:00:00+00:00")


async def _environment_seen_by(entry: dict, tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"envdump": entry}}))
    connection = load_connections(config)["envdump"]
    client = MultiServerMCPClient({"envdump": connection})
    tools = {tool.name: tool for tool in await client.get_tools(server_name="envdump")}
    content = await tools["environment"].ainvoke({})
    text = (
        content
        if isinstance(content, str)
        else "".join(b["text"] for b in content if b.get("type") == "text")
    )
    return json.loads(text)


async def test_a_third_party_server_sees_no_aisearch_setting_or_key(secrets, tmp_path: Path) -> None:
    env = await _environment_seen_by({"command": sys.executable, "args": [str(ENV_SERVER)]}, tmp_path)
    assert not [key for key in env if key.startswith("AISEARCH_")]
    assert "GITHUB_TOKEN" not in env
    assert "PATH" in env


async def test_a_server_gets_exactly_the_variables_its_entry_names(secrets, tmp_path: Path) -> None:
    entry = {
        "command": sys.executable,
        "args": [str(ENV_SERVER)],
        "env": {"ROOT": "/tmp"},
        "env_passthrough": ["GITHUB_TOKEN", "NOT_SET_ANYWHERE"],
    }
    env = await _environment_seen_by(entry, tmp_path)
    assert env["ROOT"] == "/tmp" and env["GITHUB_TOKEN"] == "ghp-secret"
    assert "NOT_SET_ANYWHERE" not in env
    assert not [key for key in env if key.startswith("AISEARCH_")]


def test_bundled_servers_get_only_the_settings_they_read(secrets) -> None:
    connections = bundled_connections()
    python_env, clock_env = connections["python"]["env"], connections["clock"]["env"]
    assert python_env["AISEARCH_SANDBOX_NAMESPACES"] == "0"
    assert clock_env["AISEARCH_CLOCK_NOW"] == "2026-11-22T09:00:00+00:00"
    for env in (python_env, clock_env):
        assert not set(SECRETS) & set(env)
    assert "AISEARCH_CLOCK_NOW" not in python_env and "AISEARCH_SANDBOX_NAMESPACES" not in clock_env


def test_docsearch_gets_the_rerank_endpoint_and_key_only_when_the_rerank_is_on(
    secrets, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("AISEARCH_INDEX_DIR", str(tmp_path))
    env = bundled_env("docsearch")
    assert env["AISEARCH_INDEX_DIR"] == str(tmp_path)
    assert not set(SECRETS) & set(env)
    monkeypatch.setenv("AISEARCH_DOCSEARCH_RERANK", "1")
    env = bundled_env("docsearch")
    assert env["AISEARCH_RERANK_API_KEY"] == "sk-rerank" and env["AISEARCH_API_KEY"] == "sk-all-roles"
    assert "AISEARCH_WRITER_API_KEY" not in env and "GITHUB_TOKEN" not in env


@pytest.mark.parametrize(
    "entry",
    [{"command": "x", "env_passthrough": "GITHUB_TOKEN"}, {"command": "x", "env": {"PORT": 8080}}],
    ids=["passthrough-not-a-list", "env-not-strings"],
)
def test_a_malformed_environment_entry_is_a_clear_error(entry: dict, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"bad": entry}}))
    with pytest.raises(ServerConfigError, match="mcpServers.bad.env"):
        load_connections(config)
