"""The tool dependency graph: schema edges across servers, weights learned from runs and persisted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.tool_history import chain_hint
from tests.conftest import Team, make_settings, run
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, PLANNER, WRITER, assessment
from tools.hub import ToolHub, ToolSpec
from tools.tool_graph import ToolHistory, build_graph, graph_json, history_path, ranked_backups, schema_edges

QUERY = "Look up the birth year of Julius Caesar and calculate how many years before 2026 that was"
PLAN = {
    "tasks": [
        {
            "id": "t1",
            "goal": "Birth year of Julius Caesar",
            "tool": "facts.birth_year",
            "args": {"person": "Julius Caesar"},
        },
        {
            "id": "t2",
            "goal": "Years from 100 BC to 2026",
            "tool": "python.calculate",
            "args": {"expression": "2026 + 100"},
            "deps": ["t1"],
        },
    ]
}


def _spec(name: str, description: str, *params: str) -> ToolSpec:
    properties = {param: {"type": "string"} for param in params}
    return ToolSpec(name, name.partition(".")[0], description, {"type": "object", "properties": properties})


def test_schema_edges_link_an_output_to_a_matching_input_across_servers() -> None:
    specs = [
        _spec("geo.locate", "Latitude and longitude of a city.", "city"),
        _spec("weather.forecast", "Weather forecast at a point.", "latitude", "longitude"),
        _spec("notes.read", "Read a note by its id.", "note_id"),
        _spec("notes.list", "List the notes.", "folder"),
    ]
    edges = {(source, target) for source, target, _ in schema_edges(specs)}
    assert ("geo.locate", "weather.forecast") in edges  # across servers, by the parameters' names
    assert ("notes.list", "notes.read") in edges  # an identifier produced by the server's list tool
    assert ("weather.forecast", "geo.locate") not in edges


@pytest.mark.slow
async def test_weights_change_after_runs_survive_a_restart_and_reach_the_planner(
    hub: ToolHub, tmp_path: Path
) -> None:
    settings = make_settings().model_copy(update={"db_path": tmp_path / "threads.sqlite"})
    specs = list(hub.specs.values())
    before = build_graph(specs, ToolHistory(history_path(settings.db_path)))
    assert not before.has_edge("facts.birth_year", "python.calculate")
    assert before.nodes["python.calculate"]["weight"] == 0.5

    for _ in range(2):
        team = Team()
        team["master"].on(MASTER, assessment("complex", "parallel", resolved=QUERY))
        team["planner"].on(PLANNER, PLAN)
        team["executor"].on(EXEC_ARGS, {"person": "Julius Caesar"})
        team["master"].on(EXEC_JUDGE, {"sufficient": True, "result": "ok"})
        team["writer"].on(WRITER, "Caesar was born 2126 years before 2026 [1][2].")
        state, _, _ = await run(team.resources(hub, settings), QUERY)
        assert [result["status"] for result in state["results"].values()] == ["ok", "ok"]

    restarted = ToolHistory(history_path(settings.db_path))  # a new process reads the same file
    after = build_graph(specs, restarted)
    edge = after.edges["facts.birth_year", "python.calculate"]
    assert edge["kinds"] == ["history"] and (edge["ok"], edge["failed"]) == (2, 0) and edge["weight"] == 0.75
    assert after.nodes["python.calculate"]["ok"] == 2 and after.nodes["python.calculate"]["weight"] == 0.75
    assert json.loads(json.dumps(graph_json(after)))["edges"]

    team = Team()
    resources = team.resources(hub, settings)
    hint = chain_hint(resources, ["facts.birth_year", "python.calculate", "clock.now"])
    assert "facts.birth_year -> python.calculate" in hint
    assert chain_hint(resources, ["clock.now", "python.calculate"]) == ""


def test_backups_with_the_better_record_come_first(tmp_path: Path) -> None:
    history = ToolHistory(tmp_path / "history.sqlite")
    history.record([("m.b", False), ("m.b", False), ("m.c", True)])
    similarity = {"m.b": 0.9, "m.c": 0.7, "m.d": 0.8}
    assert ranked_backups(["m.b", "m.c", "m.d"], similarity, history.tool_counts()) == ["m.c", "m.d", "m.b"]
