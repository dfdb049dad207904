"""The executor's search loop: sub-queries, rounds, sufficiency, refinement, budgets, citations."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agents.executor_search import SEARCHED_ONLY, run_search_task
from core.plan import Task
from core.state import TaskPayload
from tests.conftest import Team, make_settings, run
from tests.support.fakes import EXEC_SEARCH_JUDGE as SEARCH_JUDGE
from tests.support.fakes import EXEC_SUBQUERIES as SUBQUERIES
from tests.support.fakes import HOP_READ, MASTER, WRITER, assessment
from tools.hub import ToolHub, ToolSpec, query_argument
from tools.index.store import IndexStore

# names the rulers in hyphenated forms: sub-queries must share a word with the task, and the goal
# itself (the first query) must match no passage of the facts server, which matches whole words
GOAL = "Birthdates: rulers liu-che caesar-rome han-emperor"


def payload(calls_left: int = 12, **task: Any) -> TaskPayload:
    """The payload of one executor branch."""
    return TaskPayload(
        task=task,
        parent_outputs={},
        query=GOAL,
        today="2026-11-22",
        plan_version=1,
        tool_calls_left=calls_left,
        deadline=time.time() + 60,
    )


async def search(team: Team, hub: ToolHub, task: Task, calls_left: int = 12, **budgets: Any) -> tuple:
    """Run the loop directly on the facts server's search tool."""
    resources = team.resources(hub, make_settings(**budgets))
    spec = hub.specs["facts.search"]
    outcome = await run_search_task(resources, task, spec, "query", payload(calls_left), "")
    return outcome.status, outcome.output, outcome.error, outcome.calls, outcome.evidence


def test_search_tools_are_recognised_by_name_and_query_argument() -> None:
    def spec(name: str, **props: str) -> ToolSpec:
        return ToolSpec(
            name, name.split(".")[0], "", {"properties": {k: {"type": v} for k, v in props.items()}}
        )

    assert query_argument(spec("docsearch.search", query="string", k="integer")) == "query"
    assert query_argument(spec("web.web_search", q="string")) == "q"
    assert query_argument(spec("facts.birth_year", person="string")) is None
    assert query_argument(spec("db.search", ids="array")) is None


@pytest.mark.slow
async def test_an_insufficient_round_is_refined_with_the_judges_queries(team: Team, hub: ToolHub) -> None:
    team["executor"].on(SUBQUERIES, {"queries": ["Liu Che"]})
    team["executor"].on(
        lambda p: SEARCH_JUDGE in p and "[2]" not in p,
        {
            "answer": "Wu: 156 BC",
            "sources": [1],
            "sufficient": False,
            "next_queries": ["Julius Caesar birth"],
        },
    )
    team["executor"].on(
        SEARCH_JUDGE,
        {"answer": "Wu 156 BC, Caesar 100 BC", "sources": [1, 2], "sufficient": True, "next_queries": []},
    )

    status, output, error, calls, evidence = await search(
        team, hub, Task(id="t1", goal=GOAL, tool="facts.search")
    )

    assert [c.args["query"] for c in calls] == [GOAL, "Liu Che", "Julius Caesar birth"], (
        "the goal comes first"
    )
    assert (status, output, error) == ("ok", "Wu 156 BC, Caesar 100 BC", None)
    assert [e["id"] for e in evidence] == ["p-wu-1", "p-caesar-1"]
    assert all(e["kind"] == "document" for e in evidence)
    assert len([c for c in team["executor"].calls if SUBQUERIES in c.prompt]) == 1, (
        "round 2 used the judge's queries"
    )
    second_judge = [c.prompt for c in team["executor"].calls if SEARCH_JUDGE in c.prompt][1]
    assert "[1] Emperor Wu of Han" in second_judge, "the passage relied on stays in view"


@pytest.mark.slow
async def test_sub_queries_run_in_one_round_deduplicated_and_interleaved(team: Team, hub: ToolHub) -> None:
    team["executor"].on(SUBQUERIES, {"queries": ["Caesar Rome", "Liu Che", "caesar  rome", "Han emperor"]})
    team["executor"].on(
        SEARCH_JUDGE,
        {"answer": "100 BC and 156 BC", "sources": [2, 1], "sufficient": True, "next_queries": []},
    )

    status, _, _, calls, evidence = await search(team, hub, Task(id="t1", goal=GOAL, tool="facts.search"))

    assert [c.args["query"] for c in calls] == [GOAL, "Caesar Rome", "Liu Che"], "at most 3, no repeats"
    assert all(c.args["k"] == 5 for c in calls), "the search budget's k is passed"
    assert status == "ok" and [e["id"] for e in evidence] == ["p-wu-1", "p-caesar-1"]
    (judge,) = [c.prompt for c in team["executor"].calls if SEARCH_JUDGE in c.prompt]
    assert judge.index("[1] Julius Caesar") < judge.index("[2] Emperor Wu"), "rank 1 of each query first"


@pytest.mark.slow
async def test_the_loop_stops_at_the_round_budget_with_what_it_found(team: Team, hub: ToolHub) -> None:
    team["executor"].on(SUBQUERIES, {"queries": ["Liu Che"]})
    asked = iter(range(100))
    team["executor"].on(
        SEARCH_JUDGE,
        lambda p: {
            "answer": "",
            "sources": [],
            "sufficient": False,
            "next_queries": [f"Caesar try {next(asked)}"],
        },
    )

    status, output, _, calls, evidence = await search(
        team, hub, Task(id="t1", goal=GOAL, tool="facts.search"), max_executor_rounds=2
    )

    assert status == "incomplete" and len(calls) == 3
    assert [e["id"] for e in evidence] == ["p-wu-1", "p-caesar-1"], "top passages kept for the Writer"
    assert "none answers" in output


@pytest.mark.slow
async def test_the_tool_call_budget_caps_the_sub_queries(team: Team, hub: ToolHub) -> None:
    team["executor"].on(SUBQUERIES, {"queries": ["Liu Che", "Caesar Rome", "Han emperor"]})
    team["executor"].on(
        SEARCH_JUDGE, {"answer": "", "sources": [], "sufficient": False, "next_queries": ["more"]}
    )

    status, _, _, calls, _ = await search(
        team, hub, Task(id="t1", goal=GOAL, tool="facts.search"), calls_left=2
    )

    assert len(calls) == 2 and status == "incomplete"


@pytest.mark.slow
@pytest.mark.parametrize(("planned", "used"), [(1, 5), (8, 8)])
async def test_the_planners_query_is_the_first_round_and_its_k_is_floored_at_the_budget(
    team: Team, hub: ToolHub, planned: int, used: int
) -> None:
    team["executor"].on(
        SEARCH_JUDGE, {"answer": "156 BC", "sources": [1], "sufficient": True, "next_queries": []}
    )
    task = Task(id="t1", goal="Find Liu Che", tool="facts.search", args={"query": "Liu Che", "k": planned})

    status, output, _, calls, evidence = await search(team, hub, task, search_k=5)

    assert [c.args for c in calls] == [{"query": "Liu Che", "k": used}], "the goal names nothing more"
    assert not [c for c in team["executor"].calls if SUBQUERIES in c.prompt], "no sub-query call needed"
    assert (status, output, [e["id"] for e in evidence]) == ("ok", "156 BC", ["p-wu-1"])


async def test_a_goal_that_names_more_than_the_planners_query_searches_beside_it(
    team: Team, hub: ToolHub
) -> None:
    team["executor"].on(
        SEARCH_JUDGE, {"answer": "156 BC", "sources": [1], "sufficient": True, "next_queries": []}
    )
    # the Planner shortened the name: its query alone finds another emperor
    task = Task(
        id="t1", goal="Birth of Emperor Wu of Han", tool="facts.search", args={"query": "emperor births"}
    )

    _, _, _, calls, _ = await search(team, hub, task)

    assert [c.args["query"] for c in calls] == ["emperor births", "Birth of Emperor Wu of Han"]


@pytest.mark.slow
async def test_empty_results_ask_for_new_queries_naming_what_was_tried(team: Team, hub: ToolHub) -> None:
    team["executor"].on(lambda p: SUBQUERIES in p and "Already searched" in p, {"queries": ["Liu Che"]})
    team["executor"].on(SUBQUERIES, {"queries": ["rulers birthdates"]})
    team["executor"].on(
        SEARCH_JUDGE, {"answer": "156 BC", "sources": [1], "sufficient": True, "next_queries": []}
    )

    status, _, _, calls, _ = await search(team, hub, Task(id="t1", goal=GOAL, tool="facts.search"))

    assert [c.args["query"] for c in calls] == [GOAL, "rulers birthdates", "Liu Che"] and status == "ok"
    retry = [c.prompt for c in team["executor"].calls if SUBQUERIES in c.prompt][1]
    assert f"Already searched (not enough): {GOAL}; rulers birthdates. Found: nothing." in retry


@pytest.mark.slow
async def test_unusable_judge_output_falls_back_to_the_top_passage(team: Team, hub: ToolHub) -> None:
    team["executor"].on(SUBQUERIES, {"queries": ["Liu Che"]})
    team["executor"].on(SEARCH_JUDGE, "I think it is fine")

    status, output, _, _, evidence = await search(team, hub, Task(id="t1", goal=GOAL, tool="facts.search"))

    assert status == "ok" and output.startswith("Emperor Wu of Han (156 BC")
    assert [e["id"] for e in evidence] == ["p-wu-1"]


# -- the real docsearch server --------------------------------------------------------------------


@pytest.mark.slow
async def test_writer_cites_real_passages_from_docsearch(
    team: Team, docs_hub: ToolHub, fixture_index: Path
) -> None:
    query = "When did the Kestrel Bridge open, and how long is the river it spans?"
    facts = ["Kestrel Bridge opened", "river Ome length"]
    team["master"].on(MASTER, assessment("complex", "parallel", resolved=query, facts=facts))
    team["writer"].on(
        WRITER,
        lambda p: (
            f"Answer: 1932; 140 km\nBecause: The Kestrel Bridge opened in 1932 "
            f"[{_number(p, 'Kestrel Bridge')}]. The river Ome flows 140 kilometres [{_number(p, 'River Ome')}]."
        ),
    )
    settings = make_settings()
    settings.tool_candidates = 1

    state, path, _ = await run(team.resources(docs_hub, settings), query)

    results = list(state["results"].values())
    assert [r["tool_calls"][0]["args"]["query"] for r in results] == [*facts, query], "one search per fact"
    assert all(r["tool"] == "docsearch.search" and r["status"] == "ok" for r in results)
    evidence_ids = list(dict.fromkeys(eid for r in results for eid in r["evidence_ids"]))
    stored = IndexStore(fixture_index).collection("docs").chroma().get(ids=evidence_ids)
    assert len(stored["ids"]) == len(evidence_ids), "every passage is a real passage of the index"
    citations = state["answer"]["citations"]
    assert [c["title"] for c in citations] == ["Kestrel Bridge", "River Ome"]
    assert all(c["kind"] == "document" and c["source"].startswith("https://example.org/") for c in citations)
    assert state["answer"]["short"] == "1932; 140 km"
    assert path == ["master", "select_tools", "parallel_search", *["search_branch"] * 3, "writer"]
    assert not team["executor"].calls, "the searches themselves need no model"


def _number(prompt: str, title: str) -> int:
    """The [n] of the passage titled ``title`` in a judge prompt."""
    for line in prompt.splitlines():
        if line.startswith("[") and f"] {title}:" in line:
            return int(line[1 : line.index("]")])
    raise AssertionError(f"{title} not in view:\n{prompt}")


def test_code_and_echoed_instructions_are_not_queries() -> None:
    from agents.search_queries import SubQueries

    written = SubQueries.model_validate(
        {
            "queries": [
                "json.dumps({'name': 'Alice', 'age': 40, 'city': 'Chicago'})",
                "Already searched (not enough): json. Try other words.",
                "pretty-print JSON indent",
                " ".join(["word"] * 30),
                "json.dumps indent",
            ]
        }
    )
    assert written.queries == ["pretty-print JSON indent", "json.dumps indent"]


async def test_sub_queries_sharing_no_word_with_the_task_are_dropped() -> None:
    from agents.search_queries import write_subqueries
    from tests.support.fakes import ScriptedChatModel

    model = ScriptedChatModel().on(SUBQUERIES, {"queries": ["pretty-print JSON indent", "with statement"]})

    assert await write_subqueries(model, "What does the with statement do?") == ["with statement"]


@pytest.mark.slow
async def test_planner_runs_two_searches_in_parallel_and_the_writer_cites_both(
    docs_hub: ToolHub, fixture_index: Path
) -> None:
    from tests.support.fakes import EXEC_COMPUTE, PLANNER

    team = Team(delay_s=0.3)
    query = "How many years apart did the Kestrel Bridge and the Harrow Point lighthouse open?"
    team["master"].on(MASTER, assessment("complex", "parallel", resolved=query))
    team["planner"].on(
        PLANNER,
        {
            "reasoning": "Two independent opening dates, then a comparison.",
            "tasks": [
                {
                    "id": "t1",
                    "goal": "When did the Kestrel Bridge open?",
                    "tool": "docsearch.search",
                    "args": {"query": "Kestrel Bridge opened"},
                },
                {
                    "id": "t2",
                    "goal": "When was the Harrow Point lighthouse first lit?",
                    "tool": "docsearch.search",
                },
                {"id": "t3", "goal": "Which of the two came first?", "tool": None, "deps": ["t1", "t2"]},
            ],
        },
    )
    team["executor"].on(SUBQUERIES, {"queries": ["Harrow Point lighthouse lit"]})
    team["executor"].on(
        lambda p: SEARCH_JUDGE in p and "Task: When did the Kestrel Bridge open?" in p,
        lambda p: {
            "sources": [_number(p, "Kestrel Bridge")],
            "answer": "1932",
            "sufficient": True,
            "next_queries": [],
        },
    )
    team["executor"].on(
        SEARCH_JUDGE,
        lambda p: {
            "sources": [_number(p, "The Harrow Point Lighthouse")],
            "answer": "the lighthouse's date",
            "sufficient": True,
            "next_queries": [],
        },
    )
    team["executor"].on(EXEC_COMPUTE, {"result": "the lighthouse", "complete": True})
    team["writer"].on(WRITER, "The Kestrel Bridge opened in 1932 [1]. The lighthouse is older [2].")

    state, _, _ = await run(team.resources(docs_hub), query)

    # the question shares no word with docsearch's description; the Master's probe put it first
    assert state["assessment"]["probe"]["similarity"] >= 0.45 and state["route"] == "planner"
    assert state["candidate_tools"][0]["name"] == "docsearch.search"

    t1, t2 = state["results"]["t1"], state["results"]["t2"]
    assert t1["status"] == t2["status"] == "ok" and state["results"]["t3"]["status"] == "ok"
    assert t1["started_at"] < t2["finished_at"] and t2["started_at"] < t1["finished_at"], (
        "the searches overlap"
    )
    assert [c["args"]["query"] for c in t1["tool_calls"]] == ["Kestrel Bridge opened"], "the planner's query"
    assert [c["args"]["query"] for c in t2["tool_calls"]][
        0
    ] == "When was the Harrow Point lighthouse first lit?"
    cited = [c["evidence_id"] for c in state["answer"]["citations"]]
    assert cited == [t1["evidence_ids"][0], t2["evidence_ids"][0]]
    stored = IndexStore(fixture_index).collection("docs").chroma().get(ids=cited)
    assert sorted(m["title"] for m in stored["metadatas"]) == [
        "Kestrel Bridge",
        "The Harrow Point Lighthouse",
    ]


@pytest.mark.slow
async def test_a_task_that_declares_a_value_ends_in_the_readers_value_without_a_judgement(
    team: Team, hub: ToolHub
) -> None:
    team["executor"].on(
        SEARCH_JUDGE,
        {
            "answer": "Wu was born long ago, in 156 BC.",
            "sources": [1],
            "sufficient": True,
            "next_queries": [],
        },
    )
    team["writer"].on(HOP_READ, "156 BC")
    task = Task(
        id="t1", goal="Birth year of Wu", tool="facts.search", args={"query": "Liu Che"}, returns="a year"
    )

    status, output, _, _, evidence = await search(team, hub, task)

    assert (status, output, [e["id"] for e in evidence]) == ("ok", "156 BC", ["p-wu-1"])
    (read,) = [c.prompt for c in team["writer"].calls]
    assert "Question: Birth year of Wu (a year)" in read and "Emperor Wu of Han" in read
    assert not [c for c in team["executor"].calls if SEARCH_JUDGE in c.prompt], "the reader found it first"


@pytest.mark.slow
async def test_a_value_the_reader_cannot_tell_keeps_the_executors_answer(team: Team, hub: ToolHub) -> None:
    answer = {"answer": "Wu: 156 BC", "sources": [1], "sufficient": True, "next_queries": []}
    team["executor"].on(SEARCH_JUDGE, answer)
    declared = Task(
        id="t1", goal="Birth year of Wu", tool="facts.search", args={"query": "Liu Che"}, returns="a year"
    )
    passages = Task(id="t2", goal="Wu", tool="facts.search", args={"query": "Liu Che"}, returns="passages")

    assert (await search(team, hub, declared))[:2] == ("ok", "Wu: 156 BC"), "the reader said unknown"
    assert len([c for c in team["executor"].calls if SEARCH_JUDGE in c.prompt]) == 1, "then the judge"
    assert (await search(team, hub, passages))[:2] == ("ok", "Wu: 156 BC")
    assert len(team["writer"].calls) == 1, "the same passages are not read twice; passages are no value"


@pytest.mark.slow
async def test_a_plan_argument_that_fails_every_call_is_dropped_for_the_tools_default(
    team: Team, docs_hub: ToolHub
) -> None:
    team["executor"].on(
        SEARCH_JUDGE, {"answer": "1932", "sources": [1], "sufficient": True, "next_queries": []}
    )
    task = Task(
        id="t1",
        goal="When did the Kestrel Bridge open?",
        tool="docsearch.search",
        args={"query": "Kestrel Bridge opened", "collection": "musicue"},  # a collection nobody indexed
    )
    resources = team.resources(docs_hub, make_settings())

    outcome = await run_search_task(
        resources, task, docs_hub.specs["docsearch.search"], "query", payload(), ""
    )

    assert [(c.args.get("collection"), c.ok) for c in outcome.calls] == [("musicue", False), (None, True)]
    assert outcome.status == "ok" and outcome.evidence[0]["title"] == "Kestrel Bridge"


@pytest.mark.slow
async def test_a_comparisons_lookup_stops_at_passages_naming_its_entity_else_reads_on(
    team: Team, docs_hub: ToolHub
) -> None:
    team["executor"].on(
        SEARCH_JUDGE, {"answer": "1932", "sources": [1], "sufficient": True, "next_queries": []}
    )
    question = "Which is older, the Kestrel Bridge or the Zephyr Tower?"
    resources = team.resources(docs_hub, make_settings())
    spec = docs_hub.specs["docsearch.search"]

    async def lookup(goal: str) -> Any:
        task = Task(id="t1", goal=goal, tool="docsearch.search", args={"query": goal})
        return await run_search_task(resources, task, spec, "query", {**payload(), "query": question}, "")

    found = await lookup("When did the Kestrel Bridge open?")
    assert (found.status, found.output) == ("ok", SEARCHED_ONLY)
    assert [item["title"] for item in found.evidence] == ["Kestrel Bridge"], "the passages naming it"
    assert not team["executor"].calls, "unread: the comparison reads them"
    missing = await lookup("When was the Zephyr Tower built?")
    assert missing.output == "1932" and team["executor"].calls, "no passage names it: judged as before"
