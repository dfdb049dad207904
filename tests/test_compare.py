"""A comparison read one entity at a time: its form, the facts read, and the comparison in code."""

from __future__ import annotations

import pytest

from agents.compare import (
    Comparison,
    Verdict,
    cited_facts,
    comparison_of,
    date_key,
    entity_question,
    full_name,
    number_of,
    read_each,
    settle,
    sources_about,
)
from core.state import Evidence
from tests.support.fakes import ScriptedChatModel


def source(title: str, content: str = "text") -> Evidence:
    return {
        "id": title,
        "kind": "document",
        "title": title,
        "source": "s",
        "content": content,
        "task_id": "s1",
    }


@pytest.mark.parametrize(
    ("question", "form", "entities"),
    [
        ("Which came to market first, Hey Pa or Poleconomy?", "earlier", ["Hey Pa", "Poleconomy"]),
        ("who is younger Ulrich Walter or  Luca Parmitano?", "later", ["Ulrich Walter", "Luca Parmitano"]),
        ("Which composer wrote most recently, Michael Tippett or Luigi Cherubini?", "later", None),
        ("Between two scientists Ernst Messerschmid and Philippe Perrin, who is older?", "earlier", None),
        ("Which genus has more species in it, Othonna or Stangeria?", "more", ["Othonna", "Stangeria"]),
        ("Which is a type of gun dog, the Labrador Retriever or the Tibetan Terrier?", "choice", None),
        ("Were both Peter Duffell and Fred Niblo actors?", "both", ["Peter Duffell", "Fred Niblo"]),
    ],
)
def test_the_form_of_a_comparison_is_read_by_rules(
    question: str, form: str, entities: list[str] | None
) -> None:
    comparison = comparison_of(question)
    assert comparison is not None and comparison.form == form
    assert entities is None or comparison.entities == entities


@pytest.mark.parametrize(
    "question",
    [
        "What sport is played by both Justin Gimelstob and Angelique Kerber?",  # shared, not compared
        "Which restaurant chain's headquarters is further north, Pizza Inn or Papa Gino's?",  # a place
        "Which of Kylian Hazard's older brothers plays for Borussia Mönchengladbach and Belgium?",
        "Who was older than Ana and younger than Bo, Cy or Di?",  # both directions: unsafe
        "When was the Kestrel Bridge opened?",
        "Who is elder, Emperor Han-Wu or Emperor Caesar, by how many years?",  # a difference
    ],
)
def test_questions_the_rules_cannot_compare_safely_have_no_form(question: str) -> None:
    assert comparison_of(question) is None


def test_dates_numbers_and_yes_are_read_as_written() -> None:
    assert date_key("4 May 1881") == (1881, 5, 4)
    assert date_key("May 1881") == (1881, 5, 0) and date_key("in 1881") == (1881, 0, 0)
    assert date_key("156 BC") == (-156, 0, 0) and date_key("unknown") is None
    assert number_of("about 1,200 species") == 1200 and number_of("3.5 million") == 3.5e6
    assert number_of("many") is None


def test_the_comparison_is_settled_in_code_or_left_open() -> None:
    earlier = Comparison("earlier", ["A", "B"])
    assert settle(earlier, {"A": "12 March 1950", "B": "2 March 1950"}) == "B"
    assert settle(Comparison("later", ["A", "B"]), {"A": "1950", "B": "1961"}) == "B"
    assert settle(earlier, {"A": "1950", "B": "not stated"}) is None, "a date that cannot be read"
    assert settle(earlier, {"A": "1950", "B": "1950"}) is None, "a tie"
    assert settle(earlier, {"A": "1966", "B": "24 September 1966"}) is None, "a tie at the year"
    assert settle(earlier, {"A": "May 1966", "B": "24 September 1966"}) == "A"
    assert settle(Comparison("more", ["A", "B"]), {"A": "40 species", "B": "3 species"}) == "A"
    assert settle(Comparison("less", ["A", "B"]), {"A": "40", "B": "3"}) == "B"
    choice = Comparison("choice", ["A", "B"])
    assert settle(choice, {"A": "No.", "B": "Yes, it is."}) == "B"
    assert settle(choice, {"A": "yes", "B": "yes"}) is None, "both fit: the Writer reads it whole"
    both = Comparison("both", ["A", "B"])
    assert settle(both, {"A": "yes", "B": "Yes"}) == "yes"
    assert settle(both, {"A": "yes", "B": "no"}) == "no"
    assert settle(both, {"A": "yes", "B": "maybe"}) is None


def test_each_entity_is_read_on_its_own_sources() -> None:
    sources = [source("Ostrava Tower"), source("Lindqvist Tower"), source("Towers of Europe")]
    assert [s["title"] for s in sources_about("the Ostrava Tower", sources)] == ["Ostrava Tower"]
    assert sources_about("Nowhere Tower", sources) == sources, "no own source: all of them"


async def test_read_each_asks_once_per_entity_and_decides_without_a_joint_read() -> None:
    model = ScriptedChatModel()
    model.on("Answer for Wavves", "Answer: 2008").on("Answer for Social Code", "2001")
    sources = [source("Wavves", "Wavves formed in 2008."), source("Social Code", "Formed in 2001.")]

    verdict = await read_each(
        model, Comparison("earlier", ["Wavves", "Social Code"]), "Which first?", sources
    )

    assert verdict.facts == {"Wavves": "2008", "Social Code": "2001"} and verdict.answer == "Social Code"
    prompts = {call.prompt.split("Answer for ")[-1].strip(): call.prompt for call in model.calls}
    assert (
        "[1] Wavves:" in prompts["Wavves:"] and "Social Code:" not in prompts["Wavves:"].split("Question")[0]
    )
    assert len(model.calls) == 2


async def test_a_date_read_without_its_year_is_completed_from_the_source_that_states_it() -> None:
    # the 1.5B answered "May 21" over "(born May 21, 1945)": no year, so nothing was settled
    model = ScriptedChatModel()
    model.on("Answer for Ernst Messerschmid", "May 21").on("Answer for Philippe Perrin", "10 August 1964")
    sources = [
        source("Ernst Messerschmid", "Ernst Willi Messerschmid (born May 21, 1945) is a German physicist."),
        source("Philippe Perrin", "Philippe Perrin (La Tronche, 10 August 1964) is a French artist."),
    ]
    question = "Between two scientists Ernst Messerschmid and Philippe Perrin, who is older?"

    verdict = await read_each(
        model, Comparison("earlier", ["Ernst Messerschmid", "Philippe Perrin"]), question, sources
    )

    assert verdict.facts["Ernst Messerschmid"] == "May 21, 1945"
    assert verdict.answer == "Ernst Willi Messerschmid"
    unstated = (
        ScriptedChatModel().on("Answer for Ernst Messerschmid", "June 3").on("Answer for Philippe", "1964")
    )
    verdict = await read_each(
        unstated, Comparison("earlier", ["Ernst Messerschmid", "Philippe Perrin"]), question, sources
    )
    assert verdict.facts["Ernst Messerschmid"] == "June 3" and verdict.answer is None, "no year is made up"


async def test_a_date_is_not_completed_from_an_article_about_someone_else() -> None:
    # the search for Shifty Shellshock found Thomas D. Singleton's article; completed from it,
    # "November 25" became 1833 and settled "Who is older?" wrongly
    model = ScriptedChatModel()
    model.on("Answer for Carrie Akre", "May 19, 1968").on("Answer for Shifty Shellshock", "November 25")
    sources = [
        source("Carrie Akre", "Carrie Akre (born May 19, 1968) is an American singer."),
        source(
            "Thomas D. Singleton",
            "Thomas Day Singleton (Birth date unknown – November 25, 1833) was a United States Representative.",
        ),
    ]

    verdict = await read_each(
        model,
        Comparison("earlier", ["Carrie Akre", "Shifty Shellshock"]),
        "Who is older Carrie Akre or Shifty Shellshock?",
        sources,
    )

    assert verdict.facts["Shifty Shellshock"] == "November 25"
    assert verdict.answer is None, "left open for the Writer to read the question whole"


def test_a_yes_no_or_choice_question_is_asked_of_each_entity() -> None:
    both = comparison_of("Were both Peter Duffell and Fred Niblo actors?")
    assert both is not None and entity_question(
        both, "Were both Peter Duffell and Fred Niblo actors?", "Fred Niblo"
    ) == ("Were Fred Niblo actors?")
    question = "Which is a type of gun dog, the Labrador Retriever or the Tibetan Terrier?"
    choice = comparison_of(question)
    assert choice is not None
    assert (
        entity_question(choice, question, "Tibetan Terrier")
        == "Which is a type of gun dog? Is it Tibetan Terrier?"
    )
    dated = Comparison("earlier", ["A", "B"])
    assert entity_question(dated, "Which came first, A or B?", "A") == "Which came first, A or B?"


def test_the_answer_takes_the_name_its_own_article_opens_with() -> None:
    sources = [
        source("Ernst Messerschmid", "Ernst Willi Messerschmid (born 21 May 1945) is a German physicist."),
        source(
            "University of California, Berkeley", "The University of California, Berkeley is a university."
        ),
        source("Wavves", "Wavves is an American rock band formed in 2008 by Nathan Williams."),
        source("Philippe Perrin", "Perrin was a French astronaut."),
    ]
    assert full_name("Ernst Messerschmid", sources) == "Ernst Willi Messerschmid"
    assert full_name("Berkeley", sources) == "The University of California, Berkeley"
    assert full_name("Wavves", sources) == "Wavves"
    assert full_name("Philippe Perrin", sources) == "Philippe Perrin", "an opening without the name"
    assert full_name("Nowhere", sources) == "Nowhere"


def test_the_name_stops_at_markup_left_in_the_corpus() -> None:
    opening = "Sir Michael Kemp Tippett {'1': \", '2': \"} (2 January 1905 – 8 January 1998) was a composer."
    sources = [
        source("Michael Tippett", opening),
        source("Masa Takayama", 'Masayoshi "Masa" Takayama (born 1954) is a Japanese chef.'),
    ]
    assert full_name("Michael Tippett", sources) == "Michael Kemp Tippett"
    assert full_name("Masa Takayama", sources) == 'Masayoshi "Masa" Takayama', "quotes are part of a name"


def test_the_name_leaves_out_titles_letters_and_trailing_clauses() -> None:
    sources = [
        source(
            "Michael Tippett",
            "Sir Michael Kemp Tippett OM CH CBE (2 January 1905 – 8 January 1998) was a composer.",
        ),
        source("Leslie S. Hiscott", "Leslie Stephenson Hiscott (1894–1968) was a British film director."),
        source(
            "Labrador Retriever", "The Labrador Retriever, also Labrador, is a type of retriever-gun dog."
        ),
        source("Reynolds v. Sims", "Reynolds v. Sims, 377 U.S. 533 (1964), was a case."),
        source(
            "Ernst Messerschmid", "Prof. Dr. Ernst Willi Messerschmid (born May 21, 1945) is a physicist."
        ),
    ]
    assert full_name("Michael Tippett", sources) == "Michael Kemp Tippett"
    assert full_name("Leslie S. Hiscott", sources) == "Leslie Stephenson Hiscott"
    assert full_name("Labrador Retriever", sources) == "The Labrador Retriever"
    assert full_name("Reynolds v. Sims", sources) == "Reynolds v. Sims"
    assert full_name("Ernst Messerschmid", sources) == "Ernst Willi Messerschmid"


def test_dates_and_numbers_are_their_own_cited_reasons_a_yes_is_not() -> None:
    sources = [
        source("Wavves", "Wavves is a rock band formed in 2008 by Nathan Williams (born June 12, 1986)."),
        source("Towers", "Towers is a band formed in 2001."),
        source("Social Code", "Social Code is a rock group formed in 2001 in St. Albert."),
    ]
    dated = Verdict(form="earlier", facts={"Wavves": "2008", "Social Code": "2001"}, answer="Social Code")
    assert cited_facts(dated, sources) == "Wavves: 2008 [1]. Social Code: 2001 [3]."
    assert cited_facts(dated, sources[:2]) is None, "no source about Social Code writes 2001"
    both = Verdict(form="both", facts={"Wavves": "yes", "Social Code": "yes"}, answer="yes")
    assert cited_facts(both, sources) is None
    assert cited_facts(Verdict(form="earlier", facts=dated.facts, answer=None), sources) is None


def test_a_reading_is_cited_to_the_source_that_writes_it() -> None:
    sources = [
        source("Social Code", "Social Code was a Canadian rock group formed in 1999 in St. Albert."),
        source(
            "Wavves", "Wavves is a rock band. Formed in 2008 by Nathan Williams (born June 12, 1986), it..."
        ),
        source(
            "Rock 'n' Roll (Social Code album)",
            "It is the third album by Social Code, released on September 1, 2009.",
        ),
    ]
    read = {"Wavves": "June 12, 1986", "Social Code": "September 1, 2009"}
    verdict = Verdict(form="earlier", facts=read, answer="Wavves")
    assert (
        cited_facts(verdict, sources) == "Wavves: June 12, 1986 [2]. Social Code: September 1, 2009 [3]."
    ), "the album's release date is cited to the album, not to the band's article that says 1999"
    unwritten = Verdict(
        form="earlier", facts={"Wavves": "2008", "Social Code": "1 May 2004"}, answer="Social Code"
    )
    assert cited_facts(unwritten, sources) is None, "a reading nobody wrote is the Writer's to explain"
