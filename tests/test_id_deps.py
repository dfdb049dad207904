"""Tools that need an identifier another tool produces are offered with that dependency, and a plan
never reads an id it did not search for: wired when it can be, rejected (and repaired) when not."""

from __future__ import annotations

import asyncio
import importlib

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agents.id_deps import needs_of, wire_id_dependencies
from core.plan import PlanError, Task
from core.run import RunContext
from graph.builder import build_graph
from tests.conftest import Team
from tests.support.fakes import MASTER, PLANNER, assessment
from tools.catalog.load import bundled_servers
from tools.catalog.model import CatalogServer, CatalogTool
from tools.catalog.run_catalog import tool_specs
from tools.hub import ToolHub, ToolSpec
from tools.needs import tool_needs
from tools.registry import DOCSEARCH_MODULE

NEEDS = {"docsearch.read": {"passage_id": "docsearch.search"}}
READ_ALONE = "needs passage_id from docsearch.search: add a task"


def spec(name: str, description: str = "", **properties: str) -> ToolSpec:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()}, "required": []}
    return ToolSpec(name, name.partition(".")[0], description, schema)


def test_the_bundled_docsearch_tools_need_passage_ids_from_search() -> None:
    listed = asyncio.run(importlib.import_module(DOCSEARCH_MODULE).mcp.list_tools())  # its real schemas
    docsearch = CatalogServer(
        "docsearch", "", tuple(CatalogTool(t.name, t.description or "", t.inputSchema) for t in listed)
    )
    specs = [s for server in [*asyncio.run(bundled_servers()), docsearch] for s in tool_specs(server)]
    needs = {s.name: tool_needs(s, specs) for s in specs}
    assert needs["docsearch.read"] == {"passage_id": "docsearch.search"}
    assert needs["docsearch.follow_links"] == {"passage_ids": "docsearch.search"}
    assert not any(needs[name] for name in needs if name not in NEEDS and name != "docsearch.follow_links")


def test_a_third_party_id_takes_the_producer_its_description_names() -> None:
    issues = [
        spec("gh.get_issue", "Get one issue (its issueId comes from `search_issues`)", issueId="string"),
        spec("gh.search_issues", "Search issues", query="string"),
        spec("gh.list_repos", "List repositories", owner="string"),
        spec("gh.close_issue", "Close an issue", issue_id="string"),
    ]
    assert tool_needs(issues[0], issues) == {"issueId": "gh.search_issues"}
    assert tool_needs(issues[3], issues) == {}  # two search/list tools and none named: left alone
    assert tool_needs(spec("solo.get", "", item_id="string"), [spec("solo.get", "", item_id="string")]) == {}


def test_a_read_after_a_search_gets_the_dependency_and_loses_its_invented_id() -> None:
    tasks = [
        Task(id="t1", goal="find passages on sorting", tool="docsearch.search", args={"query": "sort"}),
        Task(id="t2", goal="read the best one", tool="docsearch.read", args={"passage_id": "p-123"}),
        Task(
            id="t3",
            goal="read with a reference",
            tool="docsearch.read",
            args={"passage_id": "{{t1.id}}"},
            deps=["t1"],
        ),
    ]
    wired = wire_id_dependencies(tasks, NEEDS)
    assert wired[1].deps == ["t1"] and wired[1].args == {}
    assert wired[2] is tasks[2]
    kept = [Task(id="t1", goal="search", tool="docsearch.search")]  # a re-plan: the search already ran
    (read,) = wire_id_dependencies([Task(id="t4", goal="read", tool="docsearch.read")], NEEDS, kept)
    assert read.deps == ["t1"]


def test_a_read_without_a_search_or_with_two_to_choose_from_is_rejected() -> None:
    with pytest.raises(PlanError, match=READ_ALONE):
        wire_id_dependencies([Task(id="t1", goal="read passage 7", tool="docsearch.read")], NEEDS)
    two = [
        Task(id="t1", goal="search a", tool="docsearch.search"),
        Task(id="t2", goal="search b", tool="docsearch.search"),
        Task(id="t3", goal="read", tool="docsearch.read"),
    ]
    with pytest.raises(PlanError, match=r"list the docsearch.search task \(t1, t2\)"):
        wire_id_dependencies(two, NEEDS)
    assert needs_of([{"name": "docsearch.read", "needs": NEEDS["docsearch.read"]}, {"name": "x"}]) == NEEDS


@pytest.mark.slow
async def test_the_planner_sees_the_dependency_and_a_read_without_search_is_repaired(
    docs_hub: ToolHub,
) -> None:
    query = "Read the whole passage that explains sorting a list in place"
    read_only = {
        "reasoning": "read it",
        "tasks": [
            {
                "id": "t1",
                "goal": "read the passage",
                "tool": "docsearch.read",
                "args": {"passage_id": "sorting-1"},
            }
        ],
    }
    both = {
        "reasoning": "search, then read",
        "tasks": [
            {
                "id": "t1",
                "goal": "find the passage",
                "tool": "docsearch.search",
                "args": {"query": "sort list in place"},
            },
            {
                "id": "t2",
                "goal": "read the passage",
                "tool": "docsearch.read",
                "args": {"passage_id": "sorting-1"},
            },
        ],
    }
    team = Team()
    team["master"].on(MASTER, assessment("complex", "direct", resolved=query))
    team["planner"].on(lambda prompt: READ_ALONE in prompt, both)  # the repair round shows the error
    team["planner"].on(PLANNER, read_only)
    graph = build_graph(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "ids"}}

    await graph.ainvoke(
        {"query": query},
        config,
        context=RunContext(run=team.resources(docs_hub)),
        interrupt_before=["dispatch"],
    )
    state = (await graph.aget_state(config)).values

    names = [c["name"] for c in state["candidate_tools"]]
    assert "docsearch.read" in names and names.index("docsearch.search") < names.index("docsearch.read")
    first_prompt = team["planner"].calls[0].prompt
    assert "docsearch.read(passage_id[, collection]): Read the full text" in first_prompt
    assert "(needs passage_id from docsearch.search)" in first_prompt
    assert len(team["planner"].calls) == 2  # rejected once, repaired
    tasks = {t["id"]: t for t in state["plan"]["tasks"]}
    assert tasks["t2"]["deps"] == ["t1"] and "passage_id" not in tasks["t2"]["args"]
