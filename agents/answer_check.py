"""Whether the Writer's short answer answers the question, and the turn that asks again when not.

The Writer's first turn asks for the answer alone; a small model sometimes answers with something
the question does not ask for: the answer of a step on the way, today's date from its prompt, or
the words of the question itself ("What German computer repair technician may have inspired Diary
of a Cannibal?" → "computer repair technician", with "Armin Meiwes ... is a German computer repair
technician" among its sources). Each is asked again once, in the same conversation; a reply to
that which only copies the question does not replace the first (:func:`what_stands`).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from langchain_core.messages import HumanMessage

from agents.chain_answer import UNKNOWN
from agents.facets import answer_choices, is_yes_no_question
from agents.focus import terms
from agents.prompt_date import borrows_today
from agents.short_answer import short_of
from core.state import Evidence
from prompts import render

log = logging.getLogger(__name__)

WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Reading:
    """How the Writer answers this turn."""

    direct: bool  # without sources, from the model's own knowledge
    full: bool = False  # an open question: a one-sentence summary, then the answer in full
    settled: str | None = None  # the answer a comparison read entity by entity settled
    source_chars: int = 0  # the sources cut to this many characters of what matters (0: whole)
    steps: tuple[tuple[str, str], ...] = ()  # a broken chain's hops on the way: (question, answer)
    # the prompt's date: an answer that is only this date, no source giving it, is asked again
    today: str = ""
    said: str = ""  # what the sources and the question say (where such a date would have to stand)
    quote_from: tuple[Evidence, ...] = ()  # the sources a short answer may be explained by quoting
    question: str = ""  # what the quoted sentence must be about (the resolved question)


def not_the_answer(short: str, reading: Reading) -> HumanMessage | None:
    """The turn that asks the Writer again when its short answer is not an answer to the question:
    a step's answer on the way (:func:`step_answered`), only the date its prompt gave
    (:func:`agents.prompt_date.borrows_today`), or words of the question alone
    (:func:`restates_question`); None when it stands."""
    step = step_answered(short, reading.steps)
    if step is not None:
        log.info("the Writer answered with step %r's answer %r: asked again", *step)
        return HumanMessage(content=render("writer_not_a_step", step=step[0], answer=step[1]))
    if borrowed_date(short, reading):
        log.info("the Writer answered with today's date %r, which no source gives: asked again", short)
        return HumanMessage(content=render("writer_not_today", answer=short))
    if not (reading.direct or reading.full or reading.settled) and restates_question(short, reading.question):
        log.info("the Writer answered %r, words of the question alone: asked again", short)
        return HumanMessage(content=render("writer_not_the_question", answer=short))
    return None


def what_stands(first: str, again: str, reading: Reading) -> str:
    """The reply that stands after asking again: ``again``, unless it is today's date once more
    (then "unknown": no source gives a date) or a phrase copied from the question where the first
    reply was not (then the first: asked for something other than a step's answer, the 1.5B
    answered "British rock band" where the step had found Dire Straits, which the question asked for).
    """
    if borrowed_date(short_of(again), reading):
        log.info("the Writer gave today's date again; the sources do not say")
        return UNKNOWN
    if restates_question(short_of(again), reading.question) and not restates_question(
        short_of(first), reading.question
    ):
        log.info(
            "asked again, the Writer copied the question (%r): %r stands", short_of(again), short_of(first)
        )
        return first
    return again


def borrowed_date(short: str, reading: Reading) -> bool:
    """Whether ``short`` is only the date the prompt gave, which nothing the Writer read says."""
    return bool(reading.said) and borrows_today(short, reading.today, reading.said)


def step_answered(short: str, steps: tuple[tuple[str, str], ...]) -> tuple[str, str] | None:
    """The (question, answer) of the chain step whose answer ``short`` repeats, if any.

    In a chain each step's answer is what the next step asks about ("Who wrote The Story?" →
    Brandi Carlile → "Who is the performer of …"), so it is not what the whole question asks.
    """
    said = terms(short)
    return next((step for step in steps if said and terms(step[1]) == said), None)


def restates_question(short: str, question: str) -> bool:
    """Whether ``short`` is a phrase copied from the question, and so names nothing it asks for
    ("British rock band" for "What British rock band released ...?"); an answer whose words the
    question holds apart ("Fennec fox" for "... which fox ... the series Fennec ...") is not.

    Not for a yes/no question or one that offers a choice, whose answers are the question's own
    words, nor for "unknown". Seen on two of 40 HotpotQA tuning questions (2026-11-28); its effect
    on held-out questions is in docs/results.md.
    """
    said = " ".join(WORD.findall(short.lower()))
    if not said or said == UNKNOWN or is_yes_no_question(question) or answer_choices(question):
        return False
    return f" {said} " in f" {' '.join(WORD.findall(question.lower()))} "
