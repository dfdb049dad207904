"""A hop's reading checked: an answer its passages do not hold, one the question already names, one
read off another subject, or a broken chain's answer that repeats a step's, is asked for again
(scripted models, a real docsearch MCP server on the fixture corpus).
"""

from __future__ import annotations

import pytest

from agents.chain_answer import grounded
from agents.hop_chain import hop_subject, resolve
from agents.hop_read import off_subject, read_hop
from core.state import Evidence
from tests.conftest import Team, make_settings, run
from tests.support.fakes import DECOMPOSE, HOP_READ, WRITER, ScriptedChatModel
from tests.support.hops import ANSWERS, SPLIT, THREE_HOPS, hop_reader
from tools.hub import ToolHub

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
