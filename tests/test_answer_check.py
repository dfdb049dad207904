"""A short answer copied from the question names nothing it asks for: the Writer is asked again."""

from __future__ import annotations

import pytest

from agents.answer_check import Reading, restates_question
from agents.writer import answer_first
from tests.support.fakes import ScriptedChatModel

QUESTION = "What British rock band released the album Brothers in Arms in 1985?"
SOURCES = '[1] Walk of Life: "Walk of Life" is a song by the British rock band Dire Straits (1985).'
PROMPT = f"Context:\n{SOURCES}\nQuestion: {QUESTION}\nAnswer:"
NOT_THE_QUESTION = "only repeats words of the question"
EXPLAIN = "In one sentence, say why"


@pytest.mark.parametrize(
    ("short", "question", "restated"),
    [
        ("British rock band", QUESTION, True),
        ("computer repair technician", "What German computer repair technician inspired the film?", True),
        ("Dire Straits", QUESTION, False),
        # the question holds the answer's words apart: the answer is no copied phrase
        ("Fennec fox", "Which small fox does the series Fennec have a character?", False),
        ("unknown", "What is unknown about the band?", False),
        ("yes", "Is Dire Straits a British rock band, yes or no?", False),
        ("Dire Straits", "Which band is British, Dire Straits or Blondie?", False),
        ("", QUESTION, False),
    ],
)
def test_an_answer_copied_from_the_question_is_a_restatement(
    short: str, question: str, restated: bool
) -> None:
    assert restates_question(short, question) is restated


async def test_the_writer_is_asked_again_when_its_answer_repeats_the_question() -> None:
    model = ScriptedChatModel()
    model.on(EXPLAIN, "Dire Straits released it [1].").on(NOT_THE_QUESTION, "Dire Straits")
    model.on("Question:", "British rock band")

    short, text, problem = await answer_first(model, PROMPT, Reading(direct=False, question=QUESTION))

    assert short == "Dire Straits" and problem is None
    asked = [call.prompt for call in model.calls if NOT_THE_QUESTION in call.prompt]
    assert len(asked) == 1 and '"British rock band" only repeats' in asked[0]


async def test_an_answer_that_names_something_new_is_not_asked_again() -> None:
    model = ScriptedChatModel()
    model.on(EXPLAIN, "Dire Straits released it [1].").on("Question:", "Dire Straits")

    short, _, _ = await answer_first(model, PROMPT, Reading(direct=False, question=QUESTION))

    assert short == "Dire Straits"
    assert not any(NOT_THE_QUESTION in call.prompt for call in model.calls)


NOT_A_STEP = "found on the way, not the answer to the question"


async def test_a_steps_answer_stands_when_asked_again_the_writer_copies_the_question() -> None:
    # the split's first step asked what the question asks; its second found nothing: the chain broke
    question = f"{QUESTION[:-1]} which also featured a song with the same title?"
    steps = (("What British rock band released the album Brothers in Arms in 1985?", "Dire Straits"),)
    model = ScriptedChatModel()
    model.on(EXPLAIN, "Dire Straits released it [1].").on(NOT_A_STEP, "British rock band")
    model.on("Question:", "Dire Straits")

    short, _, _ = await answer_first(model, PROMPT, Reading(direct=False, steps=steps, question=question))

    assert any(NOT_A_STEP in call.prompt for call in model.calls), "asked again: a step's answer"
    assert short == "Dire Straits", "the reply that copies the question does not replace it"
