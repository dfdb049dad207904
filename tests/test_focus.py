"""Evidence compression keeps the sentences that matter for the question, within a budget."""

from __future__ import annotations

import pytest

from agents.focus import focus_passages, passage_sentences
from agents.hop_read import HOP_CHARS, hop_sources
from core.state import Evidence
from core.text import sentences

LONG = (
    "Mountrail County is a county in the U.S. state of North Dakota. "
    "As of the 2010 census, the population was 7,673. "
    "Its county seat is Stanley. "
    "The county was created in 1873 and organized in 1909. "
    "It is named for Joseph Mountraille, a voyageur and mail carrier of Métis origin. "
    "The county lies on the Missouri Plateau and includes part of the Fort Berthold Indian Reservation."
)
OTHER = "Stanley is a city in Mountrail County. It was founded in 1902 as a railway stop."


def test_the_sentence_that_holds_the_answer_is_kept() -> None:
    [cut] = focus_passages([LONG], ["What is the county seat of Mountrail County?"], max_chars=120)

    assert cut.startswith("Mountrail County is a county"), "the first sentence names the subject"
    assert "Its county seat is Stanley." in cut
    assert "Joseph Mountraille" not in cut and len(cut) <= 120


def test_a_sentence_is_not_cut_after_initials_or_an_abbreviation() -> None:
    text = (
        "Neil Patrick Harris is an American actor. He is known for Doogie Howser, M.D. (1989 -- 1993), "
        "Barney Stinson on How I Met Your Mother and Count Olaf. He was born in Albuquerque, N.M. in 1973. "
        "St. Louis is not his home."
    )
    assert passage_sentences(text) == [
        "Neil Patrick Harris is an American actor.",
        "He is known for Doogie Howser, M.D. (1989 -- 1993), Barney Stinson on How I Met Your Mother and Count Olaf.",
        "He was born in Albuquerque, N.M. in 1973.",
        "St. Louis is not his home.",
    ]


def test_claims_are_counted_by_the_same_splitter() -> None:
    answer = "Michael J. Fox played Marty McFly [1]. He was born in Edmonton, Alta. in 1961 [2]."
    assert sentences(answer) == [
        "Michael J. Fox played Marty McFly [1].",
        "He was born in Edmonton, Alta. in 1961 [2].",
    ]


def test_passages_that_fit_are_read_whole_and_the_budget_is_shared() -> None:
    question = ["When was Stanley founded?"]
    assert focus_passages([OTHER], question, max_chars=1000) == [OTHER]

    cut_long, cut_other = focus_passages([LONG, OTHER], question, max_chars=200)

    assert cut_other == OTHER, "a short passage is kept whole; what it leaves goes to the other"
    assert len(cut_long) + len(cut_other) <= 200


@pytest.mark.slow
async def test_the_writer_reads_its_sources_cut_to_what_matters(team, hotpot_hub) -> None:
    from tests.conftest import make_settings, run
    from tests.support.fakes import WRITER

    team["writer"].on(WRITER, "Answer: Dunmore\nBecause: She was born there [1].")
    question = "Which sea is Vell Island in?"
    settings = make_settings(routing="cheap")
    settings.writer_source_chars = 120

    state, _, _ = await run(team.resources(hotpot_hub, settings), question)

    prompt = next(call.prompt for call in team["writer"].calls if "Context:" in call.prompt)
    context = prompt.split("Context:", 1)[1].split("You are the Writer", 1)[0]
    assert "North Sea" in context, "the sentence that answers is kept"
    body = [line.split(": ", 1)[1] for line in context.strip().split("\n\n") if ": " in line]
    assert sum(len(text) for text in body) <= 120, "the sources together stay within the budget"


def test_a_hop_reads_its_four_passages_within_its_budget_and_keeps_the_answer() -> None:
    filler = " ".join(f"The county held its fair number {n} in the town park." for n in range(12))
    passages = [
        Evidence(id=f"e{n}", title=title, content=f"{text} {filler}", kind="document")
        for n, (title, text) in enumerate(
            [
                ("Van Hook Township", "Van Hook Township is a township in Mountrail County, North Dakota."),
                ("Mountrail County", LONG),
                ("Stanley, North Dakota", OTHER),
                ("Parshall", "Parshall is a city in Mountrail County. It lies on the reservation."),
            ]
        )
    ]
    sources = hop_sources(passages, "What is the county seat of Mountrail County?")

    read = "".join(line.split(": ", 1)[1] for line in sources.split("\n\n"))
    assert len(read) <= HOP_CHARS < sum(len(item["content"]) for item in passages)
    assert "Its county seat is Stanley." in sources
    assert "fair number 11" not in sources, (
        'filler whose only shared word ("county") is common to every passage is cut'
    )
