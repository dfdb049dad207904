"""Bad input gets a clear answer or error, never a traceback: empty, control-only and huge queries."""

from __future__ import annotations

import pytest

from app.cli import main
from core.query import MAX_QUERY_CHARS, QueryError, prepare_query
from tests.conftest import Team, run
from tests.support.fakes import MASTER, WRITER, assessment


@pytest.mark.parametrize("raw", ["", "   \n\t ", "\x00\x01\x7f\x1b"])
def test_an_empty_query_is_refused_with_a_specific_message(raw: str) -> None:
    with pytest.raises(QueryError, match="the query is empty"):
        prepare_query(raw)


def test_a_huge_query_is_trimmed_at_a_word_and_says_by_how_much() -> None:
    raw = "Who founded Rome and why " * 40_000  # 1 MB

    query = prepare_query(raw)

    assert len(query.text) <= MAX_QUERY_CHARS and query.text.endswith("why")
    assert query.trimmed_from == len(raw.strip())
    assert query.trim_note and f"{len(raw.strip()):,}" in query.trim_note


def test_control_characters_and_lone_surrogates_are_removed() -> None:
    assert prepare_query("Who\x00 founded\x1b Rome?\ud800").text == "Who founded Rome??"
    assert prepare_query("a\nb\tc").text == "a\nb\tc", "line breaks and tabs are kept"


@pytest.mark.slow
async def test_the_graph_answers_an_empty_query_without_calling_a_model(team: Team, hub) -> None:
    state, path, _ = await run(team.resources(hub), "  \x00 ")

    assert path == ["master"]
    assert state["answer"]["text"] == "Nothing was searched: the query is empty: ask a question in words."
    assert not any(team[role].calls for role in ("master", "planner", "executor", "writer"))


@pytest.mark.slow
async def test_the_graph_reads_only_the_head_of_a_huge_query_and_says_so(team: Team, hub) -> None:
    raw = "What is the name of Emperor Han-Wu? " + "Please be thorough. " * 50_000
    team["master"].on(MASTER, assessment("simple", resolved="What is the name of Emperor Han-Wu?"))
    team["writer"].on(WRITER, "The name of Emperor Han-Wu is Liu Che.")

    state, path, _ = await run(team.resources(hub), raw)

    assert path == ["master", "writer"]
    assert len(state["query"]) <= MAX_QUERY_CHARS
    prompts = [call.prompt for role in ("master", "writer") for call in team[role].calls]
    assert prompts and max(len(p) for p in prompts) < 4 * MAX_QUERY_CHARS, "no model saw the whole query"
    (note,) = state["answer"]["missing"]
    assert "the rest was not read" in note and f"{len(raw.strip()):,}" in note


def test_the_cli_refuses_an_empty_query_before_starting_anything(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "  "]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aisearch: error: the query is empty") and "Traceback" not in err
