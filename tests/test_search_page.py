"""The search page as a person uses it: a real ``aisearch serve`` on loopback (bearer token on), the
scripted model endpoint behind it, and headless Chromium from the system's packages driven by
Playwright. Typing a question and pressing Enter streams the answer, short answer first; ``/?q=``
runs a search; sources are links; a plan review is a form that resumes the run; the model's text
is inert; the page fits a phone."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from bench.browser import CHROMIUM, MISSING, launch_chromium
from tests.conftest import REPO
from tests.support.fake_openai import fake_openai
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, PLANNER, WRITER, assessment
from tests.support.human_script import EINSTEIN, SUM, VAGUE, WHO
from tests.support.human_script import RULES as HUMAN_RULES
from tests.test_http_api import Served, serve_env

NO_CHROMIUM = f"{MISSING}; .ci/run installs it"


def browser_test(test: Any) -> Any:
    """Mark ``test`` as a browser test, skipped when the system's Chromium is missing."""
    return pytest.mark.browser(pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)(test))


RUN_TIMEOUT_MS = 60_000  # a run on a busy machine (the first one loads the tool index's embedder)
TOKEN = "page-test-token"
TOKYO = "What time is it in Osaka right now?"  # not a prompt example
AGAIN = "And what time is it in Osaka right now?"
XSS = "Draw me the answer as a picture"
XSS_ANSWER = 'Here it is: <img src=x onerror="document.body.dataset.pwned=1"><script>document.body.dataset.pwned=2</script>'
CASTLE = "When was Himeji Castle completed?"
CASTLE_PLAN = {
    "reasoning": "One web search.",
    "tasks": [
        {"id": "t1", "goal": CASTLE, "tool": "pages.find_web_pages", "args": {"query": "Himeji Castle"}}
    ],
}
RULES: list[tuple[Any, Any]] = [  # first match wins
    ((MASTER, XSS), assessment("simple", resolved=XSS)),
    (XSS, XSS_ANSWER),
    ((MASTER, "Himeji"), assessment("complex", "parallel", resolved=CASTLE)),
    ((PLANNER, "Himeji"), CASTLE_PLAN),
    ((EXEC_JUDGE, "Himeji"), {"sufficient": True, "result": "1609"}),
    (("say why", "Himeji"), "It was completed in 1609 [1], and it is white [2]."),
    ((WRITER, "Himeji"), "1609"),
    ((MASTER, "Osaka"), assessment("moderate", resolved=TOKYO, intent="current time")),
    (EXEC_ARGS, {"timezone": "Asia/Tokyo"}),
    ((EXEC_JUDGE, "Osaka"), {"sufficient": True, "result": "18:00 in Osaka"}),
    (("say why", "Osaka"), "The clock server says so [1]."),
    ((WRITER, "Osaka"), "18:00"),
    *HUMAN_RULES,
]
WATCH_ANSWER = """() => {
  window.pageSeen = {order: [], records: {}};
  for (const id of ["short-answer", "answer"]) {
    const node = document.getElementById(id);
    window.pageSeen.records[id] = 0;
    new MutationObserver((records) => {
      window.pageSeen.records[id] += records.length;
      if (node.textContent && !window.pageSeen.order.includes(id)) window.pageSeen.order.push(id);
    }).observe(node, {childList: true, characterData: true, subtree: true});
  }
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``aisearch serve`` with a bearer token, against the scripted endpoint."""
    root = tmp_path_factory.mktemp("serve-page")
    with fake_openai(RULES) as endpoint:
        mcp_config = root / "mcp.json"
        pages = {"command": sys.executable, "args": [str(REPO / "tests" / "servers" / "pages_server.py")]}
        mcp_config.write_text(json.dumps({"mcpServers": {"pages": pages}}))
        server = Served(serve_env(endpoint.url, root), root / "serve.log")
        # the scripted explanation's citations are what the page renders, not a quoted sentence
        server.start(
            "--mcp-config", str(mcp_config), AISEARCH_HTTP_TOKEN=TOKEN, AISEARCH_WRITER_QUOTES="false"
        )
        yield server
        server.stop()


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Debian's Chromium, headless, with a fresh profile (never a browser Playwright downloads)."""
    if not CHROMIUM.exists():
        pytest.skip(NO_CHROMIUM)
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        context = launch_chromium(playwright, tmp_path_factory.mktemp("chromium-profile"))
        context.set_default_timeout(RUN_TIMEOUT_MS)
        expect.set_options(timeout=RUN_TIMEOUT_MS)
        yield context
        context.close()


@pytest.fixture
def tab(chromium: Any) -> Iterator[Any]:
    """A new tab that knows the token (as a person who typed it in once), failing on any script error."""
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.add_init_script(f"sessionStorage.setItem('aisearch.token', {TOKEN!r})")
    yield page
    page.close()
    assert not errors, errors


def _answered(page: Any, short: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_test_id("short-answer")).to_have_text(short)
    expect(page.locator("#status")).to_have_text("Done.")


def test_the_page_and_its_assets_need_no_token_and_forbid_inline_script(served: Served) -> None:
    page = httpx.get(f"{served.url}/", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert (
        "script-src 'self'" in policy and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
    )
    assert 'name="q"' in page.text and "<script>" not in page.text, "no inline script"
    script = httpx.get(f"{served.url}/static/page.js", timeout=10)
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert httpx.get(f"{served.url}/static/index.html", timeout=10).status_code == 404, (
        "only the listed assets"
    )
    assert httpx.get(f"{served.url}/static/..%2Fhttp_api.py", timeout=10).status_code == 404
    assert httpx.get(f"{served.url}/", headers={"Host": "evil.example"}, timeout=10).status_code == 421
    assert httpx.post(f"{served.url}/stream", json={"input": {"query": TOKYO}}, timeout=10).status_code == 401


@browser_test
def test_typing_a_question_and_pressing_enter_streams_the_short_answer_first(
    tab: Any, served: Served
) -> None:
    from playwright.sync_api import expect

    tab.goto(served.url)
    tab.evaluate(WATCH_ANSWER)
    query = tab.get_by_label("Question", exact=True)
    expect(query).to_be_focused()
    query.fill(TOKYO)
    query.press("Enter")
    _answered(tab, "18:00")
    seen = tab.evaluate("window.pageSeen")
    assert seen["order"] == ["short-answer", "answer"], "the short answer shows first"
    assert seen["records"]["answer"] > 3, "the explanation streams in pieces"
    expect(tab.get_by_test_id("answer")).to_have_text("The clock server says so [1].")
    assert tab.url == f"{served.url}/?q={quote(TOKYO).replace('%20', '+')}", "a shareable address"

    progress = tab.get_by_test_id("progress")
    expect(progress).to_contain_text("Route: executor")
    expect(progress.locator(".task-status.ok")).to_have_count(1)
    expect(progress.locator(".task")).to_contain_text("clock.")

    sources = tab.get_by_test_id("sources").locator("li")
    expect(sources).to_have_count(1)
    expect(sources.locator("a[href]")).to_have_count(1)
    expect(sources).to_contain_text("mcp://clock/now")
    citation = tab.get_by_test_id("answer").locator("a.cite")
    assert citation.get_attribute("href") == "#source-1", "[1] links to its source"
    citation.click()
    assert tab.url.endswith("#source-1")


@browser_test
def test_a_shared_address_runs_its_search_and_the_thread_lists_its_questions(
    tab: Any, served: Served
) -> None:
    from playwright.sync_api import expect

    tab.goto(f"{served.url}/?q={quote(TOKYO)}")
    _answered(tab, "18:00")
    expect(tab.get_by_label("Question", exact=True)).to_have_value(TOKYO)
    tab.get_by_label("Question", exact=True).fill(AGAIN)
    tab.get_by_role("button", name="Search").click()
    expect(tab.locator("#question")).to_have_text(AGAIN)
    _answered(tab, "18:00")
    expect(tab.get_by_test_id("history").locator("li")).to_have_text([TOKYO, AGAIN])


@browser_test
def test_a_plan_review_is_a_form_and_approving_it_runs_the_plan(tab: Any, served: Served) -> None:
    from playwright.sync_api import expect

    tab.goto(served.url)
    tab.get_by_text("Options").click()
    tab.get_by_label("Let me review the plan before it runs").check()
    tab.get_by_label("Question", exact=True).fill(SUM)
    tab.get_by_label("Question", exact=True).press("Enter")
    form = tab.get_by_role("form", name="Plan review")
    expect(form).to_contain_text("t1: Compute 17 * 23 + 4 (python.calculate)")
    expect(tab.get_by_test_id("progress")).to_contain_text("Plan v1")
    expect(tab.get_by_test_id("short-answer")).to_be_empty()
    approve = form.get_by_role("button", name="Approve and run")
    expect(approve).to_be_focused()
    tab.keyboard.press("Enter")  # by keyboard alone
    _answered(tab, "395")
    expect(tab.locator("#pause")).to_be_hidden()
    expect(tab.get_by_test_id("progress").locator(".task-status.ok")).to_have_count(1)


@browser_test
def test_a_clarification_is_a_form_whose_answer_resumes_the_run(tab: Any, served: Served) -> None:
    from playwright.sync_api import expect

    tab.goto(served.url)
    tab.get_by_text("Options").click()
    tab.get_by_label("Ask me when a question is unclear").check()
    tab.get_by_label("Question", exact=True).fill(VAGUE)
    tab.get_by_label("Question", exact=True).press("Enter")
    expect(tab.locator("#pause")).to_contain_text(WHO)
    answer = tab.get_by_label("Your answer")
    expect(answer).to_be_focused()
    answer.fill("Albert Einstein")
    answer.press("Enter")
    expect(tab.get_by_test_id("answer")).to_contain_text(EINSTEIN)
    unlabelled = tab.evaluate(
        "[...document.querySelectorAll('input, textarea')].filter(i => !i.labels.length).map(i => i.id)"
    )
    assert unlabelled == [], "every field has a label"


@browser_test
def test_the_models_html_is_shown_as_text_and_never_runs(tab: Any, served: Served) -> None:
    from playwright.sync_api import expect

    tab.goto(f"{served.url}/?q={quote(XSS)}")
    expect(tab.locator("#status")).to_have_text("Done.")
    expect(tab.get_by_test_id("answer")).to_contain_text(
        '<img src=x onerror="document.body.dataset.pwned=1">'
    )
    assert tab.locator("#answer-section img, #answer-section script").count() == 0, "inserted as text"
    tab.wait_for_timeout(300)
    assert tab.evaluate("document.body.dataset.pwned") is None


@browser_test
def test_without_the_token_the_page_asks_for_it_and_keeps_it_in_the_tab(
    chromium: Any, served: Served
) -> None:
    from playwright.sync_api import expect

    page = chromium.new_page()
    try:
        page.goto(served.url)
        page.get_by_label("Question", exact=True).fill(TOKYO)
        page.get_by_label("Question", exact=True).press("Enter")
        expect(page.locator("#status")).to_contain_text("needs its access token")
        token = page.get_by_label("Access token (kept in this tab only)")
        expect(token).to_be_focused()
        token.fill(TOKEN)
        page.get_by_label("Question", exact=True).press("Enter")
        _answered(page, "18:00")
        assert page.evaluate("sessionStorage.getItem('aisearch.token')") == TOKEN
        assert page.evaluate("localStorage.length") == 0, "nothing outlives the tab"
    finally:
        page.close()


@browser_test
def test_the_page_fits_a_phone(tab: Any, served: Served) -> None:
    from playwright.sync_api import expect

    tab.set_viewport_size({"width": 375, "height": 740})
    tab.goto(f"{served.url}/?q={quote(TOKYO)}")
    _answered(tab, "18:00")
    assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "no sideways scrolling"
    query = tab.get_by_label("Question", exact=True).bounding_box()
    answer = tab.get_by_test_id("short-answer").bounding_box()
    progress = tab.get_by_test_id("progress").bounding_box()
    assert query and answer and progress
    assert query["x"] >= 0 and query["x"] + query["width"] <= 375
    assert progress["y"] > answer["y"], "one column: the progress below the answer"
    expect(tab.get_by_test_id("sources").locator("a[href]")).to_have_count(1)


@browser_test
def test_web_sources_link_out_and_a_script_address_is_never_a_link(tab: Any, served: Served) -> None:
    from playwright.sync_api import expect

    tab.goto(f"{served.url}/?q={quote(CASTLE)}")
    _answered(tab, "1609")
    sources = tab.get_by_test_id("sources").locator("li")
    expect(sources).to_have_count(2)
    web = sources.nth(0).locator("a[href]")
    assert web.get_attribute("href") == "https://castles.example/himeji"
    assert web.get_attribute("rel") == "noopener noreferrer" and web.get_attribute("target") == "_blank"
    assert sources.nth(1).locator("a").get_attribute("href") == "#source-2", (
        "a javascript: address stays text"
    )
    cites = tab.get_by_test_id("answer").locator("a.cite")
    assert [cites.nth(i).get_attribute("href") for i in range(2)] == [
        "https://castles.example/himeji",
        "#source-2",
    ]
    cites.nth(1).click()
    assert tab.evaluate("document.body.dataset.pwned") is None
