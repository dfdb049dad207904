"""A short answer explained by the source sentence that states it, without a second model turn."""

from __future__ import annotations

import pytest

from agents.answer_check import Reading
from agents.compare import Verdict
from agents.quote import MAX_QUOTE_CHARS, quoted_readings, quoted_reason
from agents.writer import answer_first
from core.state import Evidence
from tests.conftest import Team, make_settings, run
from tests.support.fakes import (
    EXEC_SEARCH_JUDGE,
    EXEC_SUBQUERIES,
    MASTER,
    WRITER,
    ScriptedChatModel,
    assessment,
)
from tools.hub import ToolHub

EXPLAIN = "In one sentence, say why"


def passage(title: str, content: str, kind: str = "doc") -> Evidence:
    return Evidence(id=title, kind=kind, title=title, source=f"doc://{title}", content=content)  # type: ignore[typeddict-item]


SOURCES = [
    passage(
        "Mountrail County, North Dakota", "Mountrail County is a county in North Dakota. Its seat is Stanley."
    ),
    passage(
        "Van Hook Township",
        "Van Hook Township is a civil township. It is located in Mountrail County, in the state of North Dakota.",
    ),
]


def test_the_sentence_that_states_the_answer_and_matches_the_question_is_quoted() -> None:
    quote = quoted_reason("Mountrail County", SOURCES, "Which county is Van Hook Township located in?")
    assert quote == "“It is located in Mountrail County, in the state of North Dakota.” [2]"
    assert quoted_reason("stanley", SOURCES, "What is the seat of Mountrail County?") == (
        "“Its seat is Stanley.” [1]"
    ), "any case; the title counts as what the sentence is about"


def test_no_quote_when_no_sentence_says_the_answer_on_the_question() -> None:
    question = "Which county is Van Hook Township located in?"
    assert quoted_reason("Ward County", SOURCES, question) is None, "not said by any source"
    assert quoted_reason("Stan", SOURCES, "What is the seat?") is None, "only part of a word"
    assert (
        quoted_reason("unknown", SOURCES, question) is None and quoted_reason("", SOURCES, question) is None
    )
    assert quoted_reason("North Dakota", SOURCES, "Where did the band tour in 1999?") is None, (
        "a sentence sharing no word with the question explains nothing"
    )
    memory = [passage("Model", "Van Hook Township is in Mountrail County.", kind="model")]
    assert quoted_reason("Mountrail County", memory, question) is None, "the model's memory is not a source"


def test_quotation_marks_inside_the_sentence_become_straight_ones() -> None:
    law = [passage("Donda West", "Governor Arnold Schwarzenegger signed the “Donda West Law” in 2009.")]
    quote = quoted_reason("Arnold Schwarzenegger", law, "Which governor signed the Donda West Law?")
    assert quote == '“Governor Arnold Schwarzenegger signed the "Donda West Law" in 2009.” [1]'


def test_a_long_sentence_is_cut_at_a_word() -> None:
    long = [
        passage("Stanley", "Stanley is the seat of Mountrail County " + "and a city of plains " * 40 + ".")
    ]
    quote = quoted_reason("Stanley", long, "What is the seat of Mountrail County?")
    assert quote is not None and quote.endswith(" …” [1]") and len(quote) < MAX_QUOTE_CHARS + 12


async def test_the_writer_quotes_instead_of_a_second_turn_and_explains_when_it_cannot() -> None:
    prompt = "Context: …\nQuestion: Which county is Van Hook Township located in?\nAnswer:"
    reading = Reading(
        direct=False, quote_from=tuple(SOURCES), question="Which county is Van Hook Township located in?"
    )
    model = ScriptedChatModel()
    model.on(EXPLAIN, "Van Hook Township lies in Mountrail County [2].").on("Question:", "Mountrail County")

    short, text, problem = await answer_first(model, prompt, reading)

    assert (short, problem) == ("Mountrail County", None)
    assert text == "“It is located in Mountrail County, in the state of North Dakota.” [2]"
    assert len(model.calls) == 1, "no second turn"

    model = ScriptedChatModel()
    model.on(EXPLAIN, "The sources place it in Ward County [1].").on("Question:", "Ward County")
    short, text, _ = await answer_first(model, prompt, reading)
    assert (short, text) == ("Ward County", "The sources place it in Ward County [1].")
    assert len(model.calls) == 2, "no sentence says it: the Writer explains"


ON_TOPIC = "Who built the Harrow Point lighthouse?"


def searched(team: Team) -> None:
    team["master"].on(MASTER, assessment("simple", resolved=ON_TOPIC))
    team["executor"].on(EXEC_SUBQUERIES, {"queries": ["Harrow Point lighthouse builder"]})
    team["executor"].on(
        EXEC_SEARCH_JUDGE,
        {"answer": "Miriam Calloway", "sources": [1], "sufficient": True, "next_queries": []},
    )
    team["writer"].on(EXPLAIN, "She designed it [1].").on(WRITER, "Miriam Calloway")


@pytest.mark.slow
async def test_a_searched_answer_is_explained_by_the_documents_sentence(
    team: Team, docs_hub: ToolHub
) -> None:
    searched(team)

    state, _, _ = await run(team.resources(docs_hub), ON_TOPIC)

    answer = state["answer"]
    assert answer["short"] == "Miriam Calloway"
    assert (
        answer["text"].startswith("“") and "built in 1871 by the engineer Miriam Calloway" in answer["text"]
    )
    assert (
        answer["citations"][0]["title"] == "The Harrow Point Lighthouse" and not answer["uncited_sentences"]
    )
    assert not any(EXPLAIN in call.prompt for call in team["writer"].calls), "no second turn"


@pytest.mark.slow
async def test_with_quotes_off_the_writer_explains(team: Team, docs_hub: ToolHub) -> None:
    searched(team)
    settings = make_settings()
    settings.writer_quotes = False

    state, _, _ = await run(team.resources(docs_hub, settings), ON_TOPIC)

    assert state["answer"]["text"] == "She designed it [1]."
    assert any(EXPLAIN in call.prompt for call in team["writer"].calls)


DOGS = [
    passage("Dog breeds", "The Labrador Retriever and the Tibetan Terrier are both popular dogs."),
    passage(
        "Labrador Retriever",
        "The Labrador Retriever, or Labrador, is a British breed. It is a retriever, a type of gun dog.",
    ),
    passage(
        "Tibetan Terrier",
        "The Tibetan Terrier is a medium-sized breed from Tibet. It is kept as a companion.",
    ),
]
GUN_DOG = "Which is a type of gun dog, the Labrador Retriever or the Tibetan Terrier?"


def test_a_yes_no_comparison_quotes_each_entitys_own_article() -> None:
    choice = Verdict("choice", {"Labrador Retriever": "yes", "Tibetan Terrier": "no"}, "Labrador Retriever")
    assert quoted_readings(choice, DOGS, GUN_DOG) == (
        "Labrador Retriever: “It is a retriever, a type of gun dog.” [2] "
        "Tibetan Terrier: “The Tibetan Terrier is a medium-sized breed from Tibet.” [3]"
    ), "the sentence sharing the question's words, else the article's opening; never the shared source"


def test_a_yes_no_comparison_without_an_article_or_a_verdict_is_left_to_the_writer() -> None:
    choice = Verdict("choice", {"Labrador Retriever": "yes", "Tibetan Terrier": "no"}, "Labrador Retriever")
    assert quoted_readings(choice, DOGS[:2], GUN_DOG) is None, "the Tibetan Terrier has no article here"
    assert quoted_readings(Verdict("choice", choice.facts, None), DOGS, GUN_DOG) is None
    dated = Verdict(
        "earlier", {"Labrador Retriever": "1830", "Tibetan Terrier": "1920"}, "Labrador Retriever"
    )
    assert quoted_readings(dated, DOGS, GUN_DOG) is None, "dates are their own reasons (agents/compare.py)"
