"""The graph's candidate tools come from catalogue retrieval over real stdio MCP servers that start
only when their tools are selected; a server that cannot start is that task's failure."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.run import candidate_options
from core.settings import Settings
from tests.conftest import REPO, Team, make_settings, run
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, WRITER, assessment
from tests.support.processes import processes_with
from tests.support.tool_catalog import BagOfWordsEmbedder
from tools.candidates import ToolCandidates
from tools.catalog.augment import cache_path
from tools.catalog.run_catalog import hub_catalog, run_servers
from tools.catalog.run_index import RunIndex
from tools.hub import ToolHub
from tools.index.jsonfiles import write_json
from tools.session import ServerLimits

FLAKY = str(REPO / "tests" / "servers" / "flaky_server.py")
MISBEHAVING = str(REPO / "tests" / "servers" / "misbehaving_server.py")
FAST = ServerLimits(start_timeout_s=10, probe_timeout_s=0.5, close_timeout_s=5)
QUERY = "When did Napoleon come into this world"  # no word in common with any tool of the catalogue


def tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    """A described tool (mcp.json ``"tools"`` entry) with string arguments."""
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()}}
    return {"name": name, "description": description, "inputSchema": {**schema, "required": list(properties)}}


def write_servers(path: Path, marker: str) -> Path:
    """An mcpServers catalogue: three servers described with their tools, each with ``marker`` in
    its command line; ``broken`` exits at once; ``facts`` comes last (it wins no tie)."""
    servers = {
        "archive": {
            "command": sys.executable,
            "args": [MISBEHAVING, "ok", marker],
            "description": "Echo service",
            "tools": [tool("echo", "Repeat a text a number of times", text="string")],
        },
        "broken": {
            "command": sys.executable,
            "args": ["-c", "raise SystemExit(1)", marker],
            "description": "Weather service",
            "tools": [
                tool("forecast", "Weather forecast for a city: rain, wind, temperature", city="string")
            ],
        },
        "facts": {
            "command": sys.executable,
            "args": [FLAKY, marker],
            "description": "Historical records",
            "tools": [
                tool("birth_year", "Look up the birth year of a historical person", person="string"),
                tool("biography", "Read a short biography of a historical person", person="string"),
            ],
        },
    }
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


@pytest.fixture
def marker() -> str:
    """A token in the command line of this test's servers."""
    return f"marker-{uuid.uuid4().hex}"


@pytest.fixture
async def lazy_hub(tmp_path: Path, marker: str) -> AsyncIterator[ToolHub]:
    """A hub over the described catalogue: nothing started when it opens."""
    servers = run_servers(
        {}, catalogs=[write_servers(tmp_path / "servers.json", marker)], listings_root=tmp_path
    )
    async with ToolHub.open(
        servers.connections, described=servers.specs(), descriptions=servers.descriptions(), limits=FAST
    ) as hub:
        yield hub
    assert processes_with(marker) == [], "a server process outlived its run"


def candidates_for(hub: ToolHub, root: Path, settings: Settings | None = None) -> ToolCandidates:
    """The run's retrieval as ``settings`` configure it (default: synthetic queries on), with a
    bag-of-words embedder (cosine = shared words) and its caches under ``root``."""
    if settings is None:
        settings = make_settings()
        settings.tool_synthetic_queries = True
    return ToolCandidates(hub, RunIndex(BagOfWordsEmbedder(), root=root), candidate_options(settings))


def add_synthetic_queries(hub: ToolHub, root: Path, server: str, queries: list[str]) -> None:
    """Cache synthetic queries for ``server`` as ``aisearch tools augment`` does (keyed by its profile)."""
    record = hub_catalog(hub).servers[server]
    write_json(cache_path(record, root), {"server": server, "queries": queries})


async def test_a_tool_sharing_no_word_with_the_query_is_found_through_its_synthetic_queries(
    lazy_hub: ToolHub, tmp_path: Path, marker: str
) -> None:
    before = candidates_for(lazy_hub, tmp_path / "plain").select(QUERY, 2)
    assert "facts.birth_year" not in [c["name"] for c in before.candidates]

    add_synthetic_queries(
        lazy_hub, tmp_path / "augmented", "facts", ["when did cleopatra come into this world"]
    )
    after = candidates_for(lazy_hub, tmp_path / "augmented").select(QUERY, 2)

    assert after.servers == ["facts"] and after.dense  # the server, lifted from its synthetic query
    assert {c["name"] for c in after.candidates} == {"facts.birth_year", "facts.biography"}
    assert not any(lazy_hub.started(name) for name in lazy_hub.servers), "retrieval starts no server"
    unasked = candidates_for(lazy_hub, tmp_path / "augmented", make_settings()).select(QUERY, 2)
    assert unasked.servers != ["facts"]  # the queries are used only when the settings ask for them
    assert processes_with(marker) == []


@pytest.mark.slow
async def test_only_the_selected_server_starts_in_a_run(
    lazy_hub: ToolHub, tmp_path: Path, marker: str
) -> None:
    team = Team()
    team["master"].on(MASTER, assessment("moderate", resolved=QUERY))
    team["executor"].on(EXEC_ARGS, {"person": "Napoleon"})
    team["master"].on(EXEC_JUDGE, {"sufficient": True, "result": "no record of Napoleon", "retry_args": None})
    team["writer"].on(WRITER, "The archive has no record of Napoleon [1].")
    add_synthetic_queries(lazy_hub, tmp_path, "facts", ["when did cleopatra come into this world"])
    settings = make_settings(max_replans=0)
    settings.tool_candidates = 2
    resources = team.resources(lazy_hub, settings)
    resources.candidates = candidates_for(lazy_hub, tmp_path)

    state, path, _ = await run(resources, QUERY)

    assert {c["name"] for c in state["candidate_tools"]} == {"facts.birth_year", "facts.biography"}
    (result,) = state["results"].values()
    assert result["tool"] == state["candidate_tools"][0]["name"] and result["status"] == "ok"
    assert result["tool_calls"][0]["ok"]  # the real server answered
    assert lazy_hub.started("facts")
    assert not lazy_hub.started("archive") and not lazy_hub.started("broken")
    running = [
        pid for pid in processes_with(marker) if FLAKY.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert len(running) == len(processes_with(marker)) >= 1, "only the facts server runs"


@pytest.mark.slow
async def test_a_selected_server_that_cannot_start_is_the_tasks_failure(
    lazy_hub: ToolHub, tmp_path: Path
) -> None:
    query = "Weather forecast for Paris: rain or wind?"
    team = Team()
    team["master"].on(MASTER, assessment("moderate", resolved=query))
    team["executor"].on(EXEC_ARGS, {"city": "Paris"})
    team["writer"].on(WRITER, "The forecast could not be fetched: the weather service did not start.")
    settings = make_settings(max_replans=0, max_executor_rounds=1)
    settings.tool_candidates = 1
    resources = team.resources(lazy_hub, settings)
    resources.candidates = candidates_for(lazy_hub, tmp_path)

    state, path, _ = await run(resources, query)

    assert state["candidate_tools"][0]["name"] == "broken.forecast"
    (result,) = state["results"].values()
    assert result["status"] == "failed"
    assert result["error"].startswith("tool broken.forecast unavailable: MCP server broken did not start")
    assert any("Weather forecast" in gap for gap in state["answer"]["missing"])
    assert path[-1] == "writer" and state["answer"]["text"]
    assert not lazy_hub.started("facts") and not lazy_hub.started("archive")


@pytest.mark.slow
async def test_a_server_listed_once_is_lazy_in_the_next_run(tmp_path: Path, marker: str) -> None:
    connections = {"facts": {"transport": "stdio", "command": sys.executable, "args": [FLAKY, marker]}}
    first = run_servers(connections, listings_root=tmp_path)
    assert first.described == {}
    async with ToolHub.open(first.connections, described=first.specs(), on_started=first.remember) as hub:
        assert hub.started("facts") and "facts.birth_year" in hub.specs  # unknown tools: started with the run

    second = run_servers(connections, listings_root=tmp_path)
    assert "facts.birth_year" in {spec.name for spec in second.specs()["facts"]}
    async with ToolHub.open(second.connections, described=second.specs(), limits=FAST) as hub:
        assert not hub.started("facts") and processes_with(marker) == []
        outcome = await hub.call("facts.birth_year", {"person": "Julius Caesar"}, timeout_s=10)
        assert outcome.ok and "100 BC" in outcome.output  # started by its first call
        assert hub.started("facts")
    assert processes_with(marker) == []


@pytest.mark.slow
async def test_concurrent_calls_start_a_lazy_server_once(lazy_hub: ToolHub) -> None:
    import asyncio

    calls = [lazy_hub.call("facts.birth_year", {"person": name}, timeout_s=10) for name in ("Caesar", "Wu")]
    first, second = await asyncio.gather(*calls)
    assert first.ok and second.ok
    assert lazy_hub.servers["facts"].restarts == 0 and len(lazy_hub.running_specs()) >= 2
    assert set(lazy_hub.running_specs()) >= {"facts.birth_year", "facts.search"}  # its own listing now
