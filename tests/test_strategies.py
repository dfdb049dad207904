"""SRSA's strategies really execute differently, end to end over a real docsearch MCP server.

direct = one retrieval and one read; parallel = one search branch per entity, overlapping in
time; serial = each hop's query comes from what the previous hop found, within the hop budget.
The cheap router decides these without the Master's LLM; a follow-up still asks it.
"""

from __future__ import annotations

import httpx
import openai
import pytest

from agents.strategies import passages_beside_links
from core.run import RunContext
from tests.conftest import Team, make_settings, run
from tests.support.fakes import MASTER, WRITER, assessment
from tests.test_router import Fixed
from tools.hub import ToolHub

BRIDGE = "In which village was the engineer who built the Harrow Point Lighthouse born?"
COMPARISON = "Which is taller, Ostrava Tower or Lindqvist Tower?"
SINGLE = "What river does the Kestrel Bridge cross?"
HOP = "were found by searching for the question"


def searched(state: dict) -> list[str]:
    """The queries of every search, in plan order."""
    return [state["results"][task["id"]]["tool_calls"][0]["args"]["query"] for task in state["plan"]["tasks"]]


def without_links(hub: ToolHub) -> ToolHub:
    """The hub as a search server without a link tool shows it (a third-party search server)."""
    hub.specs.pop("docsearch.follow_links")
    return hub


def number_of(prompt: str, title: str) -> int:
    """The [n] of the source titled ``title`` in a prompt."""
    for line in prompt.splitlines():
        if line.startswith("[") and f"] {title}:" in line:
            return int(line[1 : line.index("]")])
    raise AssertionError(f"{title} not among the sources:\n{prompt}")


@pytest.mark.slow
async def test_direct_is_one_retrieval_and_one_read(team: Team, hotpot_hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("moderate", "direct", resolved=SINGLE))
    team["writer"].on(
        WRITER,
        lambda p: f"Answer: the Ome\nBecause: It crosses the river Ome [{number_of(p, 'Kestrel Bridge')}].",
    )

    settings = make_settings(routing="llm")
    settings.writer_quotes = False  # the read's two turns, not a quoted sentence (tests/test_quote.py)

    state, path, _ = await run(team.resources(hotpot_hub, settings), SINGLE)

    assert path == ["master", "select_tools", "direct_search", "writer"]
    assert searched(state) == [SINGLE]
    answer_turn, reasons_turn = team["writer"].calls  # one read: the answer, then why (same conversation)
    assert "[1] Kestrel Bridge:" in answer_turn.prompt and "Context:" not in reasons_turn.prompt
    assert "not yes or no" in answer_turn.prompt, "a wh-question is not answered yes or no"
    assert not team["executor"].calls
    assert state["answer"]["short"] == "the Ome"
    assert [c["title"] for c in state["answer"]["citations"]] == ["Kestrel Bridge"]


@pytest.mark.parametrize("links", [True, False])
@pytest.mark.slow
async def test_a_single_hop_vote_takes_the_free_link_hop_only_where_the_server_follows_links(
    team: Team, hotpot_hub: ToolHub, monkeypatch: pytest.MonkeyPatch, links: bool
) -> None:
    monkeypatch.setattr("agents.master._classifier", lambda: Fixed("direct"))
    team["writer"].on(WRITER, "Answer: the Ome\nBecause: It crosses the river Ome [1].")
    hub = hotpot_hub if links else without_links(hotpot_hub)

    state, path, _ = await run(team.resources(hub, make_settings(routing="cheap")), SINGLE)

    strategy = "split_question" if links else "direct_search"
    assert path[:3] == ["master", "select_tools", strategy]
    assert state["assessment"]["decided_by"] == "classifier"
    assert not [c for c in team["master"].calls if MASTER in c.prompt], "decided without the Master's LLM"
    assert state["answer"]["short"] == "the Ome"


@pytest.mark.slow
async def test_a_comparison_that_names_its_entities_is_one_search_of_the_question(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["writer"].on(WRITER, "Answer: Ostrava Tower\nBecause: It is 212 metres tall [1].")

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), COMPARISON)

    assert not team["master"].calls, "the rules decided: no LLM assessment"
    assessed = state["assessment"]
    assert (assessed["decided_by"], assessed["strategy"], state["route"]) == ("rules", "direct", "executor")
    assert path == ["master", "select_tools", "direct_search", "writer"]
    assert searched(state) == [COMPARISON]
    titles = {state["evidence"][eid]["title"] for eid in state["results"]["s1"]["evidence_ids"]}
    assert {"Ostrava Tower", "Lindqvist Tower"} <= titles, "the question's own top passages hold both"


@pytest.mark.slow
async def test_a_comparison_is_read_one_entity_at_a_time_and_decided_in_code(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["writer"].on("Answer for Ostrava Tower", "212 metres").on("Answer for Lindqvist Tower", "187 metres")

    state, path, graph = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), COMPARISON)

    assert path == ["master", "select_tools", "direct_search", "writer"]
    answer = state["answer"]
    assert answer["compared"] == {
        "form": "more",
        "facts": {"Ostrava Tower": "212 metres", "Lindqvist Tower": "187 metres"},
        "settled": "Ostrava Tower",
    }
    assert answer["short"] == "Ostrava Tower", "the larger number wins, compared in code"
    asked = [call.prompt for call in team["writer"].calls]
    assert len(asked) == 2, "two readings, no joint read and no explanation call: the numbers are the reasons"
    for entity, other in (("Ostrava Tower", "Lindqvist Tower"), ("Lindqvist Tower", "Ostrava Tower")):
        prompt = next(p for p in asked if f"Answer for {entity}" in p)
        assert f"] {entity}:" in prompt and f"] {other}:" not in prompt, "each read on its own passages"
    assert (
        "Ostrava Tower: 212 metres [" in answer["text"] and "Lindqvist Tower: 187 metres [" in answer["text"]
    )
    assert {c["title"] for c in answer["citations"]} == {"Ostrava Tower", "Lindqvist Tower"}

    config = {"configurable": {"thread_id": "streamed"}}
    context = RunContext(run=team.resources(hotpot_hub, make_settings(routing="cheap")))
    streamed = [
        chunk[0].text
        async for mode, chunk in graph.astream(
            {"query": COMPARISON}, config, context=context, stream_mode=["messages"]
        )
        if mode == "messages" and chunk[1].get("langgraph_node") == "writer"
    ]
    assert "212 metres" not in streamed and "187 metres" not in streamed, "the readings are not streamed"


@pytest.mark.slow
async def test_a_yes_no_comparison_is_explained_by_each_entitys_own_sentence(
    team: Team, hotpot_hub: ToolHub
) -> None:
    question = "Were both Ostrava Tower and Lindqvist Tower television towers?"
    team["writer"].on("Answer for Ostrava Tower", "yes").on("Answer for Lindqvist Tower", "no")

    state, _, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), question)

    answer = state["answer"]
    assert answer["compared"]["settled"] == "no" and answer["short"] == "no"
    assert len(team["writer"].calls) == 2, (
        "two readings and no explanation call: the sources' sentences are the reasons"
    )
    assert "Ostrava Tower: “Ostrava Tower is a television tower completed in 1979" in answer["text"]
    assert "Lindqvist Tower: “Lindqvist Tower is an office tower completed in 2004" in answer["text"]
    assert {c["title"] for c in answer["citations"]} == {"Ostrava Tower", "Lindqvist Tower"}


@pytest.mark.slow
async def test_a_comparison_the_readings_leave_open_is_read_whole(team: Team, hotpot_hub: ToolHub) -> None:
    team["writer"].on("Answer for ", "not stated")
    team["writer"].on(WRITER, "Answer: Lindqvist Tower\nBecause: It is tall [1].")

    state, _, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), COMPARISON)

    assert state["answer"]["compared"]["facts"] == {
        "Ostrava Tower": "not stated",
        "Lindqvist Tower": "not stated",
    }
    assert state["answer"]["compared"]["settled"] is None
    assert state["answer"]["short"] == "Lindqvist Tower", "the Writer's own reading of the question"


@pytest.mark.slow
async def test_parallel_searches_every_entity_at_once(team: Team, hotpot_hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("complex", "parallel", resolved=COMPARISON))
    team["writer"].on("Answer for ", "not stated")  # each tower read alone settles nothing here
    team["writer"].on(
        WRITER,
        lambda p: (
            "Answer: Ostrava Tower\nBecause: Ostrava Tower is 212 metres tall "
            f"[{number_of(p, 'Ostrava Tower')}] and Lindqvist Tower 187 metres [{number_of(p, 'Lindqvist Tower')}]."
        ),
    )

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="llm")), COMPARISON)

    assessed = state["assessment"]
    assert (assessed["decided_by"], assessed["strategy"], state["route"]) == ("llm", "parallel", "executor")
    assert assessed["facets"] == ["Ostrava Tower", "Lindqvist Tower"]
    assert path == ["master", "select_tools", "parallel_search", *["search_branch"] * 3, "writer"]
    assert searched(state) == ["Ostrava Tower", "Lindqvist Tower", COMPARISON]
    branches = list(state["results"].values())
    assert max(r["started_at"] for r in branches) < min(r["finished_at"] for r in branches), (
        "branches overlap"
    )
    for entity, result in zip(["Ostrava Tower", "Lindqvist Tower"], branches, strict=False):
        titles = [state["evidence"][eid]["title"] for eid in result["evidence_ids"]]
        assert titles[0] == entity, "each branch finds its own entity"
    assert state["answer"]["short"] == "Ostrava Tower"
    assert {c["title"] for c in state["answer"]["citations"]} == {"Ostrava Tower", "Lindqvist Tower"}


@pytest.mark.slow
async def test_serial_follows_what_the_first_hop_names_without_a_model_call(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(MASTER, assessment("complex", "serial", resolved=BRIDGE))
    team["writer"].on(
        WRITER,
        lambda p: f"Answer: Dunmore\nBecause: She was born in Dunmore [{number_of(p, 'Miriam Calloway')}].",
    )
    settings = make_settings(routing="llm", search_k=1, max_hops=2)

    state, path, _ = await run(team.resources(hotpot_hub, settings), BRIDGE)

    assert path == [
        "master",
        "select_tools",
        "split_question",
        "serial_search",
        "serial_search",
        "next_hop",
        "writer",
    ]
    assert not [call for call in team["master"].calls if HOP in call.prompt], "links, not the model"
    first, second = state["plan"]["tasks"]
    assert (first["tool"], second["tool"], second["deps"]) == (
        "docsearch.search",
        "docsearch.follow_links",
        ["h1"],
    )
    first_ids = state["results"]["h1"]["evidence_ids"]
    assert second["args"]["passage_ids"] == first_ids
    first_titles = [state["evidence"][eid]["title"] for eid in first_ids]
    linked = [state["evidence"][eid]["title"] for eid in state["results"]["h2"]["evidence_ids"]]
    assert first_titles == ["Harrow Point Lighthouse"]
    assert linked[0] == "Miriam Calloway", "the engineer the lighthouse's passage names, most relevant first"
    assert set(linked) <= {"Miriam Calloway", "Vell Island"}, "only documents the first hop names"
    assert "Miriam Calloway (1832" in team["writer"].calls[0].prompt, "the Writer reads the whole passage"
    assert state["answer"]["short"] == "Dunmore"
    assert [c["title"] for c in state["answer"]["citations"]] == ["Miriam Calloway"]


@pytest.mark.slow
async def test_serial_without_links_asks_the_model_for_the_next_hop(team: Team, hotpot_hub: ToolHub) -> None:
    team["master"].on(HOP, lambda p: "Miriam Calloway" if "Miriam Calloway (1832" not in p else "DONE")
    team["master"].on(MASTER, assessment("complex", "serial", resolved=BRIDGE))
    team["writer"].on(
        WRITER,
        lambda p: f"Answer: Dunmore\nBecause: She was born in Dunmore [{number_of(p, 'Miriam Calloway')}].",
    )
    settings = make_settings(routing="llm", search_k=1, max_hops=3)

    state, path, _ = await run(team.resources(without_links(hotpot_hub), settings), BRIDGE)

    assessed = state["assessment"]
    assert (assessed["strategy"], state["route"]) == ("serial", "executor"), "complex, but search answers it"
    assert searched(state) == [BRIDGE, "Miriam Calloway"]
    first_hop, second_hop = (call.prompt for call in team["master"].calls if HOP in call.prompt)
    assert "Harrow Point Lighthouse" in first_hop and "Miriam Calloway (1832" not in first_hop
    assert "Miriam Calloway (1832" in second_hop, "the second hop read what it found"
    assert path == [
        "master",
        "select_tools",
        "split_question",
        "serial_search",
        "next_hop",
        "serial_search",
        "next_hop",
        "writer",
    ]
    assert state["plan"]["tasks"][1]["deps"] == ["h1"]
    assert state["answer"]["short"] == "Dunmore"
    assert [c["title"] for c in state["answer"]["citations"]] == ["Miriam Calloway"]


@pytest.mark.slow
async def test_serial_stops_at_the_hop_budget(team: Team, hotpot_hub: ToolHub) -> None:
    names = iter(["Miriam Calloway", "Dunmore", "Vell Island", "Ome"])
    team["master"].on(HOP, lambda p: next(names))
    team["master"].on(MASTER, assessment("complex", "serial", resolved=BRIDGE))
    team["writer"].on(WRITER, "Answer: Dunmore\nBecause: She was born in Dunmore.")
    settings = make_settings(routing="llm", search_k=1, max_hops=2)

    state, path, _ = await run(team.resources(without_links(hotpot_hub), settings), BRIDGE)

    assert searched(state) == [BRIDGE, "Miriam Calloway"]
    hop_calls = [call for call in team["master"].calls if HOP in call.prompt]
    assert len(hop_calls) == 1, "no hop decision is asked once the budget is spent"
    assert path[-2:] == ["next_hop", "writer"]


@pytest.mark.slow
async def test_a_follow_up_asks_the_master_llm(team: Team, hotpot_hub: ToolHub) -> None:
    team["writer"].on(WRITER, lambda p: "Answer: Ostrava Tower\nBecause: It is 212 metres tall.")
    team["master"].on(MASTER, assessment("moderate", "direct", resolved="How tall is Ostrava Tower?"))
    settings = make_settings(routing="cheap")
    resources = team.resources(hotpot_hub, settings)
    _, _, graph = await run(resources, COMPARISON, thread="follow-up")
    assert not team["master"].calls

    config = {"configurable": {"thread_id": "follow-up"}}
    await graph.ainvoke(
        {"query": "And how tall is the first one?"}, config, context=RunContext(run=resources)
    )
    state = (await graph.aget_state(config)).values

    assert len(team["master"].calls) == 1, "a follow-up needs the conversation: the LLM reads it"
    assert state["assessment"]["decided_by"] == "llm"
    assert state["assessment"]["resolved_query"] == "How tall is Ostrava Tower?"


@pytest.mark.slow
async def test_a_failed_hop_decision_still_answers_from_the_first_hop(
    team: Team, hotpot_hub: ToolHub
) -> None:
    def dropped(prompt: str) -> str:
        raise openai.APIConnectionError(
            request=httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
        )

    team["master"].on(HOP, dropped)
    team["master"].on(MASTER, assessment("complex", "serial", resolved=BRIDGE))
    team["writer"].on(WRITER, "Answer: Dunmore\nBecause: She was born in Dunmore.")

    settings = make_settings(routing="llm", search_k=1)

    state, path, _ = await run(team.resources(without_links(hotpot_hub), settings), BRIDGE)

    assert path[-2:] == ["next_hop", "writer"] and searched(state) == [BRIDGE]
    assert state["answer"]["short"] == "Dunmore"
    assert any("further search step" in gap for gap in state["answer"]["missing"])


def test_beside_few_links_the_writer_still_reads_a_direct_search_worth_of_passages() -> None:
    first = ["a", "b", "c", "d", "e"]
    assert passages_beside_links(first, ["x", "y"], total=5) == ["a", "b", "c"], "3 + 2 linked"
    assert passages_beside_links(first, ["x"], total=5) == ["a", "b", "c", "d"], "one link: one more"
    assert passages_beside_links(first, [], total=5) == first, "no links: the direct search's five"
    assert passages_beside_links(first, ["d"], total=5) == ["a", "b", "c", "e"], "no passage twice"


@pytest.mark.slow
async def test_serial_reads_the_first_hops_top_passages_and_their_links(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(MASTER, assessment("complex", "serial", resolved=BRIDGE))
    team["writer"].on(WRITER, "Answer: Dunmore\nBecause: She was born in Dunmore [1].")

    state, _, _ = await run(team.resources(hotpot_hub, make_settings(routing="llm", search_k=5)), BRIDGE)

    first, linked = state["results"]["h1"], state["results"]["h2"]
    again = await hotpot_hub.call("docsearch.search", {"query": BRIDGE, "k": 5}, timeout_s=30)
    searched_ids = [r["id"] for r in again.structured["results"]]
    assert first["tool_calls"][0]["args"]["k"] == 5 and len(searched_ids) == 5
    assert state["plan"]["tasks"][1]["args"]["passage_ids"] == searched_ids[:3], "links of the top 3"
    assert first["evidence_ids"][:3] == searched_ids[:3]
    assert len(first["evidence_ids"]) + len(linked["evidence_ids"]) <= 5, "no more than a direct search"
    assert not set(first["evidence_ids"]) & set(linked["evidence_ids"])
