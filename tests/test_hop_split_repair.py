"""When the model's split is poor: marked phrases, and splits that restate the question, copy a
worked example or drop one of its names, repaired into a chain (scripted models, a real docsearch
MCP server on the fixture corpus).
"""

from __future__ import annotations

import pytest

from agents.hop_chain import copied_steps, inner_phrase, lost_names, parse_steps
from agents.hop_mark import describes, describing_phrase, rest_step
from tests.conftest import Team, make_settings, run
from tests.support.fakes import DECOMPOSE, HOP_READ, MARK
from tests.support.hops import MARKED, MARKED_ANSWERS, SPLIT, THREE_HOPS, hop_reader, marker
from tests.test_strategies import searched
from tools.hub import ToolHub


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
