"""Hop by hop: a question split into simple questions, each searched with the previous answer.

End to end over a real docsearch MCP server on the fixture corpus, with scripted models: the
split, each hop's search and reading, the budget, a broken chain, and the answer composed from
the chain.
"""

from __future__ import annotations

import re

import pytest

from agents.chain_answer import broken_chain_sources, clean_hop_answer, grounded, on_the_way
from agents.hop_chain import (
    copied_steps,
    hop_subject,
    inner_phrase,
    is_chain,
    lost_names,
    named_already,
    parse_steps,
    resolve,
)
from agents.hop_mark import describes, describing_phrase, rest_step
from agents.hop_read import off_subject, read_hop, restates
from core.state import Evidence, HopRecord
from tests.conftest import Team, make_settings, run
from tests.support.fakes import DECOMPOSE, HOP_READ, MARK, WRITER, ScriptedChatModel
from tests.test_strategies import searched
from tools.hub import ToolHub

THREE_HOPS = "In which county is the birthplace of the engineer who built the Harrow Point Lighthouse?"
SPLIT = "1. Who built the Harrow Point Lighthouse?\n2. Where was #1 born?\n3. In which county is #2?"
ANSWERS = {
    "Who built the Harrow Point Lighthouse": "Miriam Calloway",
    "Where was Miriam Calloway born": "the village of Dunmore",
    "In which county is the village of Dunmore": "Stirlingshire",
}


def hop_reader(answers: dict[str, str]):
    """A scripted hop reader: the answer for the question the prompt asks ("unknown" otherwise)."""

    def reply(prompt: str) -> str:
        question = re.search(r"Question: (.+?)\??\s*\nAnswer:", prompt)
        return answers.get(question.group(1) if question else "", "unknown")

    return reply


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


MARKED = {
    THREE_HOPS: "In which county is the birthplace of [the engineer who built the Harrow Point Lighthouse]?",
    "In which county is the birthplace of Miriam Calloway?": "In which county is [the birthplace of Miriam Calloway]?",
}
MARKED_ANSWERS = {
    "Who or what is the engineer who built the Harrow Point Lighthouse": "Miriam Calloway",
    "Who or what is the birthplace of Miriam Calloway": "the village of Dunmore",
    "In which county is the village of Dunmore": "Stirlingshire",
}


def marker(marked: dict[str, str]):
    """A scripted marking model: the bracketed copy of the question it is given, or a plain copy."""

    def reply(prompt: str) -> str:
        question = prompt.strip().splitlines()[-1]
        return marked.get(question, question)

    return reply


def test_a_marked_phrase_counts_only_when_it_describes_a_part_of_the_question() -> None:
    question = "Who is the sibling of the actress who played Susan Walker in Miracle on 34th street?"
    reply = "Who is the sibling of [the actress who played Susan Walker in Miracle on 34th Street]?"
    assert (
        describing_phrase(reply, question) == "the actress who played Susan Walker in Miracle on 34th street"
    )
    assert rest_step(question, "the actress who played Susan Walker in Miracle on 34th street", 1) == (
        "Who is the sibling of #1?"
    )
    named = "What character in A League of their Own was played by the actress who played Thelma in Thelma and Louise?"
    assert describing_phrase(named.replace("Thelma and Louise", "[Thelma and Louise]"), named) is None, (
        "a name"
    )
    assert (
        describing_phrase("When was [the sibling of Alice de Lusignan] crowned?", "When was Alice crowned?")
        is None
    )
    assert describing_phrase(f"[{question}]", question) is None, "the whole question"
    asked = "Renzo Gracie beat the champion who was a pioneer of what sports organization?"
    assert describing_phrase(asked.replace("what sports", "[what sports") + "]", asked) is None, (
        "what it asks"
    )
    assert describing_phrase(question, question) is None, "nothing marked"
    assert describes("the top PC manufacturer from 1994") and not describes(
        "Alice de Lusignan, Countess of Surrey"
    )


@pytest.mark.slow
async def test_a_question_the_split_keeps_whole_is_chained_through_its_marked_phrases(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(MARK, marker(MARKED))
    team["writer"].on(HOP_READ, hop_reader(MARKED_ANSWERS))

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert path[2:] == ["split_question", "hop", "hop", "hop", "writer"]
    assert searched(state) == [
        "Who or what is the engineer who built the Harrow Point Lighthouse?",
        "Who or what is the birthplace of Miriam Calloway?",
        "In which county is the village of Dunmore?",
    ], "each marked phrase asked first, its answer written into the rest"
    assert state["answer"]["short"] == "Stirlingshire"


@pytest.mark.slow
async def test_the_hop_budget_bounds_a_marked_chain(team: Team, hotpot_hub: ToolHub) -> None:
    team["master"].on(MARK, marker(MARKED))
    answers = MARKED_ANSWERS | {"In which county is the birthplace of Miriam Calloway": "Stirlingshire"}
    team["writer"].on(HOP_READ, hop_reader(answers))
    settings = make_settings(routing="cheap", max_chain_hops=2)

    state, path, _ = await run(team.resources(hotpot_hub, settings), THREE_HOPS)

    assert path[2:] == ["split_question", "hop", "hop", "writer"], "two hops, no third marked"
    assert searched(state)[-1] == "In which county is the birthplace of Miriam Calloway?"


def test_a_split_that_restates_the_question_first_gives_the_phrase_it_asks_about_later() -> None:
    question = "What political party was the socialist candidate part of who ran for president in 1912?"
    steps = [question, "Who is the socialist candidate?"]
    assert inner_phrase(steps, question) == "the socialist candidate"
    assert inner_phrase([question, "Who is #1?"], question) is None, "a reference is a chain's step"
    assert inner_phrase(["x", "What was the conflict?"], "Where was the conflict fought?") is None, (
        "too vague"
    )
    assert inner_phrase(["x", "Who is Kenny G?"], "Who played with Kenny G?") is None, "a name"
    assert inner_phrase(["x", "Who was the mayor?"], question) is None, "not in the question"


@pytest.mark.slow
async def test_a_split_asking_its_inner_question_last_is_chained_inner_question_first(
    team: Team, hotpot_hub: ToolHub
) -> None:
    restated = f"1. {THREE_HOPS}\n2. Who is the engineer who built the Harrow Point Lighthouse?"
    team["master"].on(DECOMPOSE, restated)
    answers = {
        "Who or what is the engineer who built the Harrow Point Lighthouse": "Miriam Calloway",
        "In which county is the birthplace of Miriam Calloway": "Stirlingshire",
    }
    team["writer"].on(HOP_READ, hop_reader(answers))

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert path[2:] == ["split_question", "hop", "hop", "writer"]
    assert searched(state) == [
        f"Who or what is the engineer who built the Harrow Point Lighthouse? {THREE_HOPS}",
        "In which county is the birthplace of Miriam Calloway?",
    ], "the inner question first, searched with the question it was cut from; its answer written in"
    assert state["answer"]["short"] == "Stirlingshire"


AGAIN = "That answer is not written in the context"
RECALLED = ANSWERS | {"Who built the Harrow Point Lighthouse": "Penelope Kent"}  # in no passage


def test_an_answer_is_grounded_when_its_words_stand_in_the_passages() -> None:
    context = (
        "[1] Five Finger Exercise: an early screen appearance from Lana Wood, the sister of Natalie Wood."
    )
    assert grounded("Lana Wood", context) and grounded("lana wood.", context)
    assert not grounded("Penelope Kent", context), "a name no passage holds is recalled, not read"
    assert not grounded("", context)


@pytest.mark.slow
async def test_a_hop_answer_not_in_its_passages_is_asked_for_again_copied(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(DECOMPOSE, SPLIT)
    team["writer"].on(AGAIN, "Miriam Calloway").on(HOP_READ, hop_reader(RECALLED))

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert path[3:] == ["hop", "hop", "hop", "writer"]
    assert [step["answer"] for step in state["answer"]["chain"]] == list(ANSWERS.values())
    assert sum(AGAIN in call.prompt for call in team["writer"].calls) == 1, "asked again only for hop 1"


OTHER = "is named in the question itself"
NAMED = ANSWERS | {"Where was Miriam Calloway born": "Miriam Calloway"}  # what the question names


@pytest.mark.slow
async def test_a_hop_answer_the_question_already_names_is_asked_for_again(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(DECOMPOSE, SPLIT)
    team["writer"].on(OTHER, "the village of Dunmore").on(HOP_READ, hop_reader(NAMED))

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert path[3:] == ["hop", "hop", "hop", "writer"], "hop 2 read again, the chain goes on"
    assert [step["answer"] for step in state["answer"]["chain"]] == list(ANSWERS.values())
    asked_again = [call.prompt for call in team["writer"].calls if OTHER in call.prompt]
    assert len(asked_again) == 1 and "Miriam Calloway is named in the question" in asked_again[0]


@pytest.mark.slow
async def test_a_hop_answer_still_not_in_its_passages_breaks_the_chain(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(DECOMPOSE, SPLIT)
    team["writer"].on(AGAIN, "Penelope Kent").on(HOP_READ, hop_reader(RECALLED))
    team["writer"].on(WRITER, "Answer: Stirlingshire\nBecause: It is [1].")

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert path[3:] == ["hop", "writer"], "hop 1 unanswered: the chain stops"
    assert state["hops"][0]["status"] == "unanswered" and state["hops"][0]["answer"] == ""


NOT_A_STEP = "found on the way, not the answer to the question"


@pytest.mark.slow
async def test_a_broken_chains_answer_that_repeats_a_steps_answer_is_asked_for_again(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(DECOMPOSE, SPLIT)
    team["writer"].on(NOT_A_STEP, "Stirlingshire").on(WRITER, "Miriam Calloway")
    team["writer"].on(HOP_READ, hop_reader({"Who built the Harrow Point Lighthouse": "Miriam Calloway"}))

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert path[3:] == ["hop", "hop", "writer"], "hop 2 unanswered: the chain broke"
    assert state["answer"]["short"] == "Stirlingshire"
    asked = [call.prompt for call in team["writer"].calls if NOT_A_STEP in call.prompt]
    assert 'Miriam Calloway is what the step "Who built the Harrow Point Lighthouse?" found' in asked[0]


@pytest.mark.slow
async def test_a_split_whose_first_hop_finds_nothing_starts_again_from_the_marked_phrase(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(DECOMPOSE, SPLIT).on(MARK, marker(MARKED))
    team["writer"].on(HOP_READ, hop_reader(MARKED_ANSWERS))  # nothing for the split's first hop

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert path[2:] == ["split_question", "hop", "hop", "hop", "hop", "writer"]
    assert searched(state) == [
        "Who built the Harrow Point Lighthouse?",
        "Who or what is the engineer who built the Harrow Point Lighthouse?",
        "Who or what is the birthplace of Miriam Calloway?",
        "In which county is the village of Dunmore?",
    ], "the split's first hop found nothing: the marked chain from the start"
    assert state["answer"]["short"] == "Stirlingshire"


def test_a_later_hop_is_about_the_earlier_answer_its_question_names() -> None:
    step = "Which county shares a border with #1?"
    subject, template = hop_subject(step, ["Allamakee County"])
    assert subject == "Allamakee County"
    off = Evidence(id="b", title="Baranya County", content="Baranya County borders Croatia.", kind="document")
    on = Evidence(id="w", title="Winneshiek County", content="It borders Allamakee County.", kind="document")
    assert off_subject("Baranya County", [off, on], subject, template) is not None, "said only off subject"
    assert off_subject("Winneshiek County", [off, on], subject, template) is None
    assert off_subject("Baranya County", [off], "", "") is None, "a first hop has no subject"
    village = Evidence(
        id="d", title="Dunmore", content="Dunmore is a village in Stirlingshire.", kind="document"
    )
    engineer = Evidence(id="m", title="Miriam Calloway", content="She was born in Dunmore.", kind="document")
    unsplit = "In which county is the birthplace of #1?"
    assert off_subject("Stirlingshire", [engineer, village], "Miriam Calloway", unsplit) is None, (
        "one link away"
    )
    assert off_subject("Croatia", [off], "Baranya County", "Which country borders #1?") is None


class _Reader:
    """The run as ``read_hop`` uses it: the Writer's model."""

    def __init__(self, model: ScriptedChatModel) -> None:
        self.scripted = model

    def model(self, role: str) -> ScriptedChatModel:
        return self.scripted


async def test_a_hop_answer_read_off_another_subject_is_asked_for_again() -> None:
    model = (
        ScriptedChatModel()
        .on("is about Allamakee County", "Winneshiek County")
        .on(HOP_READ, "Baranya County")
    )
    passages = [
        Evidence(id="b", title="Baranya County", content="Baranya County borders Croatia.", kind="document"),
        Evidence(id="w", title="Winneshiek County", content="It borders Allamakee County.", kind="document"),
    ]
    step = "Which county shares a border with #1?"
    question = resolve(step, ["Allamakee County"])

    answer = await read_hop(
        _Reader(model), question, passages, subject=hop_subject(step, ["Allamakee County"])
    )  # type: ignore[arg-type]

    assert answer == "Winneshiek County"
    assert len(model.calls) == 2, "asked once more, about the earlier answer"


def test_a_split_that_drops_a_name_of_the_question_is_not_followed() -> None:
    question = "What is the species of animal which the town of Antelope, Kansas was named after?"
    dropped = [
        "What town was named after an animal?",
        "What is the species of animal that #1 was named after?",
    ]
    assert lost_names(question, dropped) == {"antelope", "kansa"}
    kept = ["Which company makes the iPhone?", "Who founded #1?"]
    assert lost_names("Who founded the company that makes the iPhone?", kept) == set()
    assert lost_names(
        "In 2002, what company merged with the top PC maker from 1994?", ["Who merged in 2002?"]
    ) == {
        "pc",
        "1994",
    }


COPIED = "1. Which governor signed the Clean Air Act of 1970?\n2. What party did #1 belong to?"


def test_a_step_copied_from_a_worked_example_is_found() -> None:
    question = "What requests did Governor Vaudreuil make to the people who formerly ruled Lebanon?"
    assert copied_steps(question, parse_steps(COPIED)) == [
        "Which governor signed the Clean Air Act of 1970?",
        "What party did #1 belong to?",
    ]
    own = ["Which company makes the iPhone?", "Who founded #1?"]
    assert copied_steps("Who founded the company that makes the iPhone?", own) == [], (
        "an example's own question split as the example shows copies nothing"
    )


@pytest.mark.slow
async def test_a_split_that_copies_a_worked_example_is_not_followed(team: Team, hotpot_hub: ToolHub) -> None:
    team["master"].on(DECOMPOSE, f"{COPIED}\n3. {THREE_HOPS}")
    team["master"].on(MARK, marker(MARKED))
    team["writer"].on(HOP_READ, hop_reader(MARKED_ANSWERS))

    state, _, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert "Which governor signed the Clean Air Act of 1970?" not in searched(state)
    assert searched(state)[0] == "Who or what is the engineer who built the Harrow Point Lighthouse?"
    assert state["answer"]["short"] == "Stirlingshire"


@pytest.mark.slow
async def test_a_split_that_drops_a_name_is_chained_through_the_marked_phrase(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(
        DECOMPOSE, "1. Who built the lighthouse?\n2. Where was #1 born?\n3. In which county is #2?"
    )
    team["master"].on(MARK, marker(MARKED))
    team["writer"].on(HOP_READ, hop_reader(MARKED_ANSWERS))

    state, path, _ = await run(team.resources(hotpot_hub, make_settings(routing="cheap")), THREE_HOPS)

    assert searched(state)[0] == "Who or what is the engineer who built the Harrow Point Lighthouse?", (
        "the split lost 'Harrow Point': the question's marked phrase is asked first"
    )
    assert state["answer"]["short"] == "Stirlingshire"


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
