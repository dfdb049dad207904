"""An answer that is only the prompt's date: today's date, which no source gives, is asked again."""

from __future__ import annotations

import pytest

from agents.answer_check import Reading
from agents.prompt_date import borrows_today, full_date
from agents.writer import answer_first
from tests.support.fakes import ScriptedChatModel

TODAY = "Sunday, 2026-11-22 UTC"
NOT_TODAY = "is today's date, not a date the sources give"
EXPLAIN = "In one sentence, say why"
SOURCES = "[1] Governor of Rome: The last governor's term ended in 1952."


def test_only_a_full_date_equal_to_today_without_a_source_is_borrowed() -> None:
    assert borrows_today("November 22, 2026", TODAY, SOURCES)
    assert borrows_today("22 Nov 2026", TODAY, SOURCES)
    assert borrows_today("2026-11-22", TODAY, SOURCES)
    assert not borrows_today("1952", TODAY, SOURCES), "another date"
    assert not borrows_today("2026", TODAY, SOURCES), "a year alone is not today's date"
    assert not borrows_today("November 22, 2026", TODAY, "clock: now is 2026-11-22T09:00"), "a source says it"
    assert not borrows_today("22 November 2026", TODAY, "The vote was held on 22 November 2026."), (
        "spelled out"
    )
    assert not borrows_today("November 22, 2026", "", SOURCES), "no date in the prompt"
    assert full_date("Lyons' death in 1939") is None and full_date("x" * 500) is None


@pytest.mark.parametrize(
    ("again", "explained", "expected"),
    [
        ("1952", "The sources say the term ended in 1952 [1].", "1952"),
        # a date no source gives, asked for twice, is not an answer
        ("November 22, 2026", "The sources do not say when it ended.", "unknown"),
    ],
)
async def test_the_writer_is_asked_again_when_it_answers_with_todays_date(
    again: str, explained: str, expected: str
) -> None:
    model = ScriptedChatModel()
    model.on(EXPLAIN, explained).on(NOT_TODAY, again)
    model.on("Question:", "November 22, 2026")
    reading = Reading(direct=False, today=TODAY, said=SOURCES)

    short, text, problem = await answer_first(
        model, f"Context:\n{SOURCES}\nQuestion: When did it end?\nAnswer:", reading
    )

    assert short == expected and problem is None
    assert any(NOT_TODAY in call.prompt for call in model.calls)


async def test_a_question_about_today_keeps_todays_date() -> None:
    model = ScriptedChatModel()
    model.on(EXPLAIN, "It is today [1].").on("Question:", "November 22, 2026")

    short, _, _ = await answer_first(
        model, "Question: What is the date today?\nAnswer:", Reading(direct=False, today=TODAY)
    )

    assert short == "November 22, 2026", "nothing said to check against (a question about now): kept"
    assert not any(NOT_TODAY in call.prompt for call in model.calls)
