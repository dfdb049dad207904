"""Hop by hop: a question split into simple questions, each searched with the previous answer.

End to end over a real docsearch MCP server on the fixture corpus, with scripted models: the
split, each hop's search and reading, the budget, a broken chain, and the answer composed from
the chain.
"""

from __future__ import annotations

import pytest

from agents.chain_answer import broken_chain_sources, clean_hop_answer, on_the_way
from agents.hop_chain import is_chain, named_already, parse_steps, resolve
from agents.hop_read import restates
from core.state import Evidence, HopRecord
from tests.conftest import Team, make_settings, run
from tests.support.fakes import DECOMPOSE, HOP_READ, WRITER, ScriptedChatModel
from tests.support.hops import ANSWERS, SPLIT, THREE_HOPS, hop_reader
from tests.test_strategies import searched
from tools.hub import ToolHub


def test_a_split_is_read_in_order_and_cut_before_a_forward_reference() -> None:
    reply = "1. Who built X?\n2) Where was #1 born?\n3. What is #4?\n4. Question: more"
    assert parse_steps(reply) == ["Who built X?", "Where was #1 born?"]
    assert parse_steps("Sure!\n1. A?\n2. B of #1?\n\nQuestion: next example\n1. C?") == ["A?", "B of #1?"]
    assert resolve("In which county is #2?", ["Miriam Calloway", "Dunmore"]) == "In which county is Dunmore?"


def test_only_linked_questions_within_the_budget_make_a_chain() -> None:
    assert is_chain(["Who built X?", "Where was #1 born?"], "q", max_hops=4)
    assert not is_chain(["When was A born?", "When was B born?"], "q", max_hops=4), "independent: no chain"
    assert not is_chain(["A?", "B #1?", "C #2?", "D #3?", "E #4?"], "q", max_hops=4), "over the hop budget"
    assert not is_chain(["q"], "q", max_hops=4)
    restated = "Who is the child of the person who issued the Tamworth manifesto?"
    assert not is_chain([restated, "Who is the parent of #1?"], restated, max_hops=4), "the question restated"


def test_an_answer_that_repeats_the_question_is_no_answer() -> None:
    question = "The territory containing Bansaan Island is located at which island?"
    assert restates("Bansaan", ["Which island is located at Bohol Island?", question])
    assert not restates("Panglao Island", ["Which island is located at Bohol Island?", question])


def test_a_broken_chain_is_read_from_the_whole_question_and_the_passages_holding_its_answers() -> None:
    def passage(pid: str, title: str, content: str) -> Evidence:
        return Evidence(id=pid, kind="document", title=title, content=content, source="s", task_id="t")

    sources = [
        passage("a", "Harrow Point Lighthouse", "Built in 1871 by an engineer of the county."),
        passage("b", "Miriam Calloway", "Miriam Calloway was an engineer born in Dunmore."),
        passage("c", "Kestrel Bridge", "A bridge over the Ome."),
        passage("d", "Ome (river)", "A river."),
        passage("e", "Dunmore", "A village."),
    ]
    hops = [
        HopRecord(step="1", query="Who built it?", answer="Miriam Calloway", task_id="h1", status="answered"),
        HopRecord(step="2", query="Where was #1 born?", answer="", task_id="h2", status="unanswered"),
    ]
    ids = {"h1": ["a", "b", "c"], "h2": ["d"], "q": ["e", "a"]}

    read = broken_chain_sources(hops, ids, sources)

    assert [item["id"] for item in read] == ["e", "a", "b"], "whole question first, then the answer's passage"
    assert broken_chain_sources(hops, {"h1": ["c"]}, sources) == sources, "nothing chosen: all of them"


def test_a_reply_that_says_it_does_not_know_is_unknown() -> None:
    assert clean_hop_answer("Answer: Stirlingshire.") == "Stirlingshire"
    for reply in ("unknown", "The context does not say.", "Not mentioned", ""):
        assert clean_hop_answer(reply) == "unknown"


@pytest.mark.slow
async def test_a_three_hop_question_is_answered_hop_by_hop(team: Team, hotpot_hub: ToolHub) -> None:
    team["master"].on(DECOMPOSE, SPLIT)
    team["writer"].on(HOP_READ, hop_reader(ANSWERS))

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert path[:3] == ["master", "select_tools", "split_question"]
    assert path[3:] == ["hop", "hop", "hop", "writer"]
    queries = searched(state)
    assert queries == [
        "Who built the Harrow Point Lighthouse?",
        "Where was Miriam Calloway born?",
        "In which county is the village of Dunmore?",
    ], "each hop's query holds the previous hop's answer"
    answer = state["answer"]
    assert answer["short"] == "Stirlingshire"
    assert [step["answer"] for step in answer["chain"]] == list(ANSWERS.values())
    for step in answer["chain"]:
        read = [state["evidence"][eid]["title"] for eid in step["evidence_ids"]]
        assert read and read == step["titles"], "each hop records the passages it read by id"
    cited = {c["title"] for c in answer["citations"]}
    assert {"Harrow Point Lighthouse", "Miriam Calloway", "Dunmore"} <= cited, "every hop cites its passage"
    writer_prompts = [call.prompt for call in team["writer"].calls]
    assert len(writer_prompts) == 3 and all(HOP_READ in p for p in writer_prompts), "no read beyond the hops"


async def test_hops_are_read_by_the_reader_role_when_it_has_a_model_of_its_own(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(DECOMPOSE, SPLIT)
    team.models["reader"] = ScriptedChatModel(name_="reader")
    team["reader"].on(HOP_READ, hop_reader(ANSWERS))

    state, _, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert state["answer"]["short"] == "Stirlingshire"
    assert len(team["reader"].calls) == 3, "one read per hop, by the reader"
    assert not any(HOP_READ in call.prompt for call in team["writer"].calls), "the Writer reads no hop"


async def test_a_hop_that_asks_only_the_name_of_an_earlier_answer_is_that_answer(
    team: Team, hotpot_hub: ToolHub
) -> None:
    question = "What is the name of the engineer who built the Harrow Point Lighthouse?"
    team["master"].on(DECOMPOSE, "1. Who built the Harrow Point Lighthouse?\n2. What is the name of #1?")
    team["writer"].on(HOP_READ, hop_reader(ANSWERS))

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), question)

    assert path[2:] == ["split_question", "hop", "hop", "writer"]
    assert searched(state) == ["Who built the Harrow Point Lighthouse?"], "the name is not searched for"
    assert state["answer"]["short"] == "Miriam Calloway"
    assert [step["status"] for step in state["answer"]["chain"]] == ["answered", "answered"]
    assert len(team["writer"].calls) == 1, "one read: the first hop's"


def test_only_a_bare_name_of_an_earlier_answer_is_answered_by_it() -> None:
    first = HopRecord(step="Who built it?", query="Who built it?", answer="Miriam Calloway", task_id="h1",
                      status="answered")  # fmt: skip
    assert named_already("What is the name of #1?", [first]) is first
    assert named_already("What was the name of #1", [first]) is first
    assert named_already("What is the full name of #1?", [first]) is None, "asks for more"
    assert named_already("What is the name of #1's father?", [first]) is None
    unknown = HopRecord(
        step="Who built it?", query="Who built it?", answer="", task_id="h1", status="unanswered"
    )
    assert named_already("What is the name of #1?", [unknown]) is None


@pytest.mark.slow
async def test_the_hop_budget_stops_a_longer_split(team: Team, hotpot_hub: ToolHub) -> None:
    team["master"].on(DECOMPOSE, SPLIT)
    team["writer"].on(HOP_READ, hop_reader(ANSWERS)).on(WRITER, "Answer: Dunmore\nBecause: [1].")
    settings = make_settings(routing="cheap", max_chain_hops=2)

    state, path, _ = await run(team.resources(hotpot_hub, settings), THREE_HOPS)

    assert "hop" not in path, "three questions over a two-hop budget: searched whole"
    assert state["hops"] == []


@pytest.mark.slow
async def test_a_hop_its_passages_do_not_answer_hands_the_findings_to_the_writer(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(DECOMPOSE, SPLIT)
    answers = {key: value for key, value in ANSWERS.items() if "county" not in key}
    team["writer"].on(HOP_READ, hop_reader(answers)).on(WRITER, "Answer: Stirlingshire\nBecause: It is [3].")

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert path[3:] == ["hop", "hop", "hop", "writer"]
    assert [h["status"] for h in state["hops"]] == ["answered", "answered", "unanswered"]
    assert searched(state)[-1] == THREE_HOPS, "a broken chain searches the whole question too"
    final = team["writer"].calls[-2].prompt  # the Writer's answer turn (then its explanation)
    assert "Found step by step: Who built the Harrow Point Lighthouse? Miriam Calloway" in final
    assert "Where was Miriam Calloway born? the village of Dunmore" in final
    assert state["answer"]["short"] == "Stirlingshire"
    whole = state["results"]["q"]["evidence_ids"]
    read = [source["id"] for source in state["answer"]["sources"]]
    assert read[: len(whole)] == whole, "the whole question's passages first, as single-shot RAG reads them"


@pytest.mark.slow
async def test_a_question_kept_whole_takes_the_serial_search(team: Team, hotpot_hub: ToolHub) -> None:
    team["writer"].on(WRITER, "Answer: Dunmore\nBecause: She was born there [1].")
    question = "In which village was the engineer who built the Harrow Point Lighthouse born?"

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), question)

    assert path[:4] == ["master", "select_tools", "split_question", "serial_search"]
    assert "hop" not in path and not state["answer"].get("chain")


def test_only_hops_a_later_hop_asks_about_are_on_the_way() -> None:
    def hop(step: str, answer: str) -> HopRecord:
        status = "answered" if answer else "unanswered"
        return HopRecord(step=step, query=step, answer=answer, task_id="", status=status)

    hops = [
        hop("Which TV series is set in Bikini Bottom?", "SpongeBob SquarePants"),
        hop("Who created Robocalypse?", "Vogster Entertainment"),
        hop("Which TV series was written by #2?", ""),
    ]
    assert [record["answer"] for record in on_the_way(hops)] == ["Vogster Entertainment"], (
        "the first hop stands beside the others: its answer may be the question's"
    )
