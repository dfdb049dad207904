"""Web evidence in the graph: the Master sends questions beyond the local documents and about the
present to the web, the answer cites the fetched page by URL (real websearch server over stdio,
real loopback SearxNG fixture, scripted models); without web search it says so instead of guessing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agents.web_route import NO_WEB_ANSWER, NO_WEB_GAP, asks_about_now, wants_web
from tests.conftest import Team, make_settings, run, server_connections
from tests.servers import web_fixture
from tests.support.fakes import EXEC_SEARCH_JUDGE, EXEC_SUBQUERIES, MASTER, WRITER, assessment
from tools.hub import ToolHub
from tools.registry import bundled_connections
from tools.web.config import WebSearchConfig

QUESTION = "Who is the first director of the Velmora Tidal Observatory?"
PAGE = "/pages/velmora-observatory.html"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with web_fixture.running() as url:
        yield url


@pytest.fixture
async def web_hub(base: str, tmp_path: Path) -> AsyncIterator[ToolHub]:
    """The bundled servers plus websearch over the fixture (allow-listed: it lives on loopback)."""
    config = WebSearchConfig(searxng_url=base, allow_hosts=[base.removeprefix("http://")], cache_dir=tmp_path)
    connections = server_connections(with_facts=False) | {
        "websearch": bundled_connections(config)["websearch"]
    }
    async with ToolHub.open(connections) as opened:
        yield opened


@pytest.mark.slow
async def test_a_question_beyond_the_documents_is_answered_from_a_fetched_page(
    team: Team, web_hub: ToolHub, base: str
) -> None:
    team["master"].on(MASTER, assessment("simple", resolved=QUESTION))
    team["executor"].on(EXEC_SUBQUERIES, {"queries": ["Velmora Tidal Observatory director"]})
    team["executor"].on(
        EXEC_SEARCH_JUDGE,
        lambda prompt: {
            "answer": "Ilsabet Marrow" if "Ilsabet Marrow" in prompt else "",
            "sources": [1],
            "sufficient": "Ilsabet Marrow" in prompt,
            "next_queries": [],
        },
    )
    team["writer"].on(WRITER, "The observatory's first director is the oceanographer Ilsabet Marrow [1].")

    state, path, _ = await run(team.resources(web_hub), QUESTION)

    assert state["assessment"]["web"] and state["assessment"]["escalated"] == "web"
    assert state["route"] == "executor" and path[:2] == ["master", "select_tools"]
    assert state["candidate_tools"][0]["name"] == "websearch.search"
    citation = state["answer"]["citations"][0]
    assert citation["source"] == base + PAGE
    assert citation["title"].startswith("Velmora Tidal Observatory opens")
    cited = state["evidence"][citation["evidence_id"]]
    assert "Ilsabet Marrow" in cited["content"], "read from the page: the search snippet does not name her"
    assert cited["content"].startswith("(published 2026-11-18)")
    assert cited["published"] == "2026-11-18"
    shown = next(source for source in state["answer"]["sources"] if source["n"] == citation["n"])
    assert shown["published"] == "2026-11-18", "the answer's source list carries the page's date"
    writer_prompt = next(call.prompt for call in team["writer"].calls if WRITER in call.prompt)
    assert "Ilsabet Marrow" in writer_prompt


@pytest.mark.slow
async def test_a_question_about_the_present_without_web_search_says_so(team: Team) -> None:
    """The bundled servers only: nothing here knows the present."""
    question = "What is the latest release of the Kestrel build tool?"
    team["master"].on(MASTER, assessment("simple", resolved=question))

    async with ToolHub.open(server_connections(with_facts=False)) as hub:
        state, path, _ = await run(team.resources(hub), question)

    assert state["answer"]["text"] == NO_WEB_ANSWER and state["answer"]["missing"] == [NO_WEB_GAP]
    assert path == ["master"] and not team["writer"].calls, "no guess from memory"


@pytest.mark.parametrize(
    ("query", "similarity", "web"),
    [
        ("What is the latest release of Kestrel?", None, True),  # the present, no documents
        ("What is the weather in Port Keswin today?", 0.5, False),  # live, but the documents cover it
        ("What is the weather in Port Keswin today?", 0.35, True),  # live, documents only on topic
        ("Who built the Harrow Point lighthouse?", 0.5, False),  # the documents answer it
        ("Who built the Harrow Point lighthouse?", 0.1, True),  # nothing on its topic locally
        ("What time is it in Tokyo now?", None, False),  # the clock's
        ("What is 17% of 2350?", None, False),  # a calculation
        ("How should I plan a week in Lisbon?", 0.1, False),  # open: the Master's choice
    ],
)
def test_which_questions_go_to_the_web(query: str, similarity: float | None, web: bool) -> None:
    assert wants_web(query, similarity, make_settings(), web=True) is web
    assert not wants_web(query, similarity, make_settings(), web=False)


def test_questions_about_the_present() -> None:
    assert asks_about_now("Any news about the Keswin ferries?")
    assert not asks_about_now("What is today's date?") and not asks_about_now("Who wrote Hamlet?")
