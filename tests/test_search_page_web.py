"""The search page answering from the web, in headless Chromium: a real ``aisearch serve`` whose
``websearch`` server searches the loopback SearxNG fixture and fetches its saved pages (scripted
models). A question only a fixture page answers shows its short answer and the page as a source
that opens in a new tab; a dead or slow provider ends the run with a clear message on the page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from models.server_process import free_port as closed_port
from tests.servers import web_fixture
from tests.support.fake_openai import fake_openai
from tests.support.fakes import EXEC_SEARCH_JUDGE, EXEC_SUBQUERIES, MASTER, WRITER, assessment
from tests.test_http_api import Served, serve_env
from tests.test_search_page import TOKEN, browser_test
from tests.test_search_page import chromium as chromium_context
from tests.test_search_page import tab as new_tab

QUESTION = "Who is the first director of the Velmora Tidal Observatory?"
DIRECTOR = "Ilsabet Marrow"  # only the fixture page names her; its search snippet does not
PAGE = "/pages/velmora-observatory.html"
TITLE = "Velmora Tidal Observatory opens on the Keswin coast"
MESSAGES = {"dead": "is unreachable", "slow": "did not answer within"}
TIMEOUT_S = 1.0  # the slow provider answers after web_fixture.SLOW_S
RULES: list[tuple[Any, Any]] = [  # first match wins
    ((MASTER, "Velmora"), assessment("simple", resolved=QUESTION)),
    (EXEC_SUBQUERIES, {"queries": ["Velmora Tidal Observatory director"]}),
    (
        (EXEC_SEARCH_JUDGE, DIRECTOR),
        {"answer": DIRECTOR, "sources": [1], "sufficient": True, "next_queries": []},
    ),
    (EXEC_SEARCH_JUDGE, {"answer": "", "sources": [], "sufficient": False, "next_queries": []}),
    (("say why", DIRECTOR), "The observatory's first director is the oceanographer Ilsabet Marrow [1]."),
    ((WRITER, DIRECTOR), DIRECTOR),
    (WRITER, "I could not find who the first director is."),
]
chromium = chromium_context  # the browser and tab fixtures of the search page's tests
tab = new_tab
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+")


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    with web_fixture.running() as url:
        yield url


@pytest.fixture(scope="module")
def servers(fixture_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Served]]:
    """Three servers against one scripted endpoint, their web provider the fixture, a closed port
    and the fixture's slow route; each allowed to fetch the fixture although it is on loopback."""
    providers = {
        "live": fixture_url,
        "dead": f"http://127.0.0.1:{closed_port()}",
        "slow": f"{fixture_url}/slow",
    }
    with fake_openai(RULES) as endpoint:
        started: dict[str, Served] = {}
        try:
            for name, provider in providers.items():
                root = tmp_path_factory.mktemp(f"serve-web-{name}")
                web = {
                    "AISEARCH_SEARXNG_URL": provider,
                    "AISEARCH_WEB_ALLOW_HOSTS": fixture_url.removeprefix("http://"),
                    "AISEARCH_WEB_CACHE_DIR": str(root / "web-cache"),
                    "AISEARCH_WEB_TIMEOUT_S": str(TIMEOUT_S),
                }
                server = Served(serve_env(endpoint.url, root, **web), root / "serve.log")
                started[name] = server
                server.start(AISEARCH_HTTP_TOKEN=TOKEN)
            yield started
        finally:
            for server in started.values():
                server.stop()


def _finished(tab: Any) -> str:
    """Wait for the run to end (the Search button back, no Stop); the status line then."""
    from playwright.sync_api import expect

    expect(tab.locator("main")).to_have_attribute("aria-busy", "false")
    expect(tab.locator("#stop")).to_be_hidden()
    expect(tab.locator("#ask")).to_be_enabled()
    return tab.locator("#status").inner_text()


@browser_test
def test_a_question_only_a_web_page_answers_shows_the_page_as_its_source(
    tab: Any,
    servers: dict[str, Served],
    fixture_url: str,
) -> None:
    from playwright.sync_api import expect

    tab.goto(f"{servers['live'].url}/?q={quote(QUESTION)}")
    expect(tab.get_by_test_id("short-answer")).to_have_text(DIRECTOR)
    assert _finished(tab) == "Done."
    # the page's own sentence, quoted and cited (agents/quote.py)
    expect(tab.get_by_test_id("answer")).to_contain_text(
        "“The observatory's first director is the oceanographer"
    )
    expect(tab.get_by_test_id("progress")).to_contain_text("websearch.")

    sources = tab.get_by_test_id("sources").locator("li")
    expect(sources.first).to_contain_text(fixture_url + PAGE)
    link = sources.first.locator("a[href]")
    assert link.get_attribute("href") == fixture_url + PAGE
    assert link.get_attribute("target") == "_blank" and link.get_attribute("rel") == "noopener noreferrer"
    expect(link).to_contain_text(TITLE)
    published = sources.first.get_by_test_id("published")
    expect(published).to_have_text(" · published 2026-11-18")
    assert published.get_attribute("datetime") == "2026-11-18"
    cite = tab.get_by_test_id("answer").locator("a.cite")
    assert cite.get_attribute("href") == fixture_url + PAGE, "[1] opens the page itself"


@browser_test
@pytest.mark.parametrize("provider", ["dead", "slow"])
def test_a_dead_or_slow_provider_ends_the_run_with_a_clear_message(
    tab: Any, servers: dict[str, Served], provider: str
) -> None:
    from playwright.sync_api import expect

    tab.goto(f"{servers[provider].url}/?q={quote(QUESTION)}")
    status = _finished(tab)
    page_text = tab.locator("body").inner_text()
    assert not TRACEBACK.search(page_text), page_text
    expect(tab.get_by_test_id("short-answer")).not_to_have_text(DIRECTOR)
    message = rf"No sources: websearch\.search: web search provider searxng at \S+ {MESSAGES[provider]}"
    expect(tab.locator("#gaps .error")).to_have_text(re.compile(message))
    assert status == "Done.", "the run ends; the page is not left waiting"
