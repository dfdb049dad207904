"""Open questions get a summary and a full cited answer; factoid questions a few words and a sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.answer_check import Reading
from agents.answer_form import is_open_question
from agents.writer import FULL_TOKENS, answer_first
from evals.baseline import Baselines
from tests.conftest import Team, run
from tests.support.fakes import MASTER, WRITER, ScriptedChatModel, assessment
from tools.index.search import Searcher
from tools.index.store import IndexStore

TRIP = (
    "I'm planning a year-long backpacking trip around the world on a tight budget of $5000. What are "
    "some tips for extremely cheap travel, accommodation, and food options?"
)


@pytest.mark.parametrize(
    "query",
    [
        TRIP,  # SRSA's contextual queries (seed 002)
        "Analyze why the Haier KFR model floor-standing air conditioner is popular among consumers.",
        "I want to buy an off-road vehicle. Is Porsche better or BMW?",
        "Why do people choose ski suits instead of down jackets when skiing?",
        "Research the sales of ski suits in China in 2023 and write a comparative report.",
        "How can I keep my sourdough starter alive while travelling?",
    ],
)
def test_advice_plans_and_analysis_are_open(query: str) -> None:
    assert is_open_question(query)


@pytest.mark.parametrize(
    "query",
    [  # HotpotQA dev: names in titles are not the asker ("I Love Lucy"), "better known" is a name
        'Dawn Lake described the star of "I Love Lucy" as what?',
        "What production company co-owned by Kevin Loader and Rodger Michell produced My Cousin Rachel?",
        'Who wrote lyrics for both "Little Shop of Horrors" and the song "Be Our Guest?"',
        "What is the real name of the rapper better known as Shifty Shellshock?",
        "Which came first, the Kestrel Bridge or the River Ome?",
        "What time is it in Tokyo now?",
    ],
)
def test_factoid_questions_are_not_open(query: str) -> None:
    assert not is_open_question(query)


async def test_an_open_question_is_summed_up_then_answered_in_full_with_citations() -> None:
    model = ScriptedChatModel()
    model.on("answer in full", "- Sleep in hostels [1].\n- Cook your own food [2].")
    model.on("sums up the answer", "Travel slowly and cheaply.")
    prompt = "Context:\n[1] Hostels: cheap.\n\nAnswer the question from the context in one sentence that sums up the answer."

    short, text, problem = await answer_first(model, prompt, Reading(direct=False, full=True))

    assert (short, problem) == ("Travel slowly and cheaply", None)
    assert text == "- Sleep in hostels [1].\n- Cook your own food [2]."
    assert FULL_TOKENS >= 400, "room for a few paragraphs"


async def test_the_writers_answer_has_plain_quotes_where_the_model_wrote_references() -> None:
    model = ScriptedChatModel()
    model.on("say why", "[1] calculate({&#34;expression&#34;: &#34;17 * 23 + 4&#34;}) gives 395.")
    model.on("short phrase", "&#34;395&#34;")
    prompt = "Context:\n[1] calculate: 395\n\nAnswer with a short phrase."

    short, text, _ = await answer_first(model, prompt, Reading(direct=False))

    assert short == "395"
    assert text == '[1] calculate({"expression": "17 * 23 + 4"}) gives 395.'


@pytest.mark.slow
async def test_the_writer_answers_an_open_question_in_full(team: Team, hub) -> None:
    team["master"].on(MASTER, assessment("simple", resolved=TRIP))
    team["writer"].on("answer in full", "Stay in hostels, cook your own meals and travel overland.")
    team["writer"].on(WRITER, "Travel slowly, sleep cheaply and cook.")

    state, path, _ = await run(team.resources(hub), TRIP)

    assert path == ["master", "writer"]
    first, second = team["writer"].calls
    assert (
        "in one sentence that sums up the answer" in first.prompt and "short phrase only" not in first.prompt
    )
    assert "answer in full" in second.prompt and "own knowledge" in second.prompt
    answer = state["answer"]
    assert answer["length"] == "full" and answer["short"] == "Travel slowly, sleep cheaply and cook"
    assert answer["text"] == "Stay in hostels, cook your own meals and travel overland."


@pytest.mark.slow
async def test_a_factoid_question_stays_brief(team: Team, hub) -> None:
    query = "What is the name of Emperor Han-Wu?"
    team["master"].on(MASTER, assessment("simple", resolved=query))
    team["writer"].on(WRITER, "Liu Che.")

    state, _, _ = await run(team.resources(hub), query)

    assert "short phrase only" in team["writer"].calls[0].prompt
    assert state["answer"]["length"] == "brief"


@pytest.mark.slow
async def test_the_baselines_answer_an_open_question_in_full_too(hotpot_index: Path) -> None:
    reader = ScriptedChatModel()
    reader.on("in full: cover every part", "Stay in hostels [1].\nCook your own food.")
    reader.on("short phrase only", "the Ome")
    baselines = Baselines(reader, Searcher(IndexStore(hotpot_index).require("docs")))

    rag = await baselines.rag(TRIP)
    closed = await baselines.closed_book(TRIP)
    factoid = await baselines.rag("What river does the Kestrel Bridge cross?")

    assert rag["prediction"] == "Stay in hostels [1].\nCook your own food." and rag["evidence"]
    assert closed["prediction"] == "Stay in hostels [1].\nCook your own food."
    assert (factoid["prediction"], factoid["short"]) == ("the Ome", "the Ome")
    assert "in full" not in reader.calls[-1].prompt


async def test_the_baselines_read_quotes_written_as_references_as_the_writer_does(hotpot_index: Path) -> None:
    reader = ScriptedChatModel().on("short phrase only", "&#34;Be Our Guest&#34;")
    baselines = Baselines(reader, Searcher(IndexStore(hotpot_index).require("docs")))

    factoid = await baselines.rag("Which song did Howard Ashman write for Beauty and the Beast?")

    assert factoid["prediction"] == '"Be Our Guest"'
