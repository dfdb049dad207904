"""Web search providers and page fetching against a real loopback HTTP fixture: SearxNG, Tavily and
Brave clients, SSRF refusals (literal, encoded and resolved addresses, redirects), extraction of
saved article pages, content-type and size limits, the page cache and budget."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import web_fixture
from tools.web.pages import PageBudget, PageBudgetSpent, PageCache, PageReader, passages, rank
from tools.web.providers import Brave, SearchFailed, SearxNG, Tavily
from tools.web.safe_http import AddressGuard, FetchFailed, FetchRefused, SafeFetcher, why_blocked

OBSERVATORY = "/pages/velmora-observatory.html"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with web_fixture.running() as url:
        yield url


def allowed(base: str, **limits: float) -> SafeFetcher:
    """A fetcher that may read the fixture (its host:port is allow-listed)."""
    return SafeFetcher(AddressGuard([base.removeprefix("http://")]), **limits)  # type: ignore[arg-type]


async def test_searxng_results_carry_url_title_snippet_and_date(base: str) -> None:
    results = await SearxNG(base).search("Velmora Tidal Observatory director", 3)

    top = results[0]
    assert top.url == base + OBSERVATORY
    assert top.title.startswith("Velmora Tidal Observatory opens")
    assert top.snippet == "A new observatory for tides and coastal storms opens on the Keswin coast."
    assert top.published == "2026-11-18T08:30:00+00:00"
    assert len(await SearxNG(base).search("Keswin", 1)) == 1


@pytest.mark.parametrize(
    ("where", "timeout", "message"),
    [
        ("/broken", 5.0, "answered HTTP 500"),
        ("/slow", 0.5, "did not answer within 0.5 s"),
        ("http://127.0.0.1:9", 2.0, "is unreachable"),
    ],
)
async def test_a_failing_searxng_is_one_clear_error(
    base: str, where: str, timeout: float, message: str
) -> None:
    url = where if where.startswith("http") else base + where
    with pytest.raises(SearchFailed, match=message) as caught:
        await SearxNG(url, timeout_s=timeout).search("anything", 3)
    assert "searxng at http://127.0.0.1" in str(caught.value)


async def test_keyed_providers_send_their_key_and_share_the_result_type(base: str) -> None:
    tavily = await Tavily("test-key", url=base + "/tavily").search("Kestrel release", 2)
    brave = await Brave("test-key", url=base + "/brave").search("Kestrel release", 2)

    assert tavily[0].url == brave[0].url == base + "/pages/kestrel-release.html"
    assert tavily[0].published == brave[0].published == "2026-11-21"
    with pytest.raises(SearchFailed, match="refused the request .HTTP 401"):
        await Tavily("wrong", url=base + "/tavily").search("Kestrel", 2)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://[::1]:8080/",
        "http://2130706433/",  # 127.0.0.1 as one decimal number
        "http://0x7f.0.0.1/",  # hex
        "http://017700000001/",  # octal
        "http://[::ffff:127.0.0.1]/",  # IPv4-mapped IPv6
        "http://localhost/",  # a name that resolves to loopback
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://[fd00:ec2::254]/",  # the IPv6 metadata address (unique local)
        "http://0.0.0.0/",
    ],
)
async def test_non_public_addresses_are_refused(url: str) -> None:
    with pytest.raises(FetchRefused, match="refused .add it to AISEARCH_WEB_ALLOW_HOSTS"):
        await SafeFetcher(AddressGuard()).get(url)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://127.0.0.1/"])
async def test_only_http_and_https_are_fetched(url: str) -> None:
    with pytest.raises(FetchRefused, match="only http and https"):
        await SafeFetcher(AddressGuard()).get(url)


def test_public_addresses_pass_the_check() -> None:
    for address in ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"):
        assert why_blocked(ipaddress.ip_address(address)) is None


async def test_the_fixture_itself_is_refused_until_allow_listed(base: str) -> None:
    with pytest.raises(FetchRefused, match="loopback"):
        await SafeFetcher(AddressGuard()).get(base + OBSERVATORY)
    download = await allowed(base).get(base + OBSERVATORY)
    assert download.content_type == "text/html" and b"Ilsabet Marrow" in download.body


@pytest.mark.parametrize(
    "target",
    ["http://10.0.0.7/admin", "http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:9/", "LOCALHOST"],
)
async def test_a_redirect_to_a_private_address_is_refused(base: str, target: str) -> None:
    """The fixture is allowed; where it redirects to is checked again (another port, another name)."""
    if target == "LOCALHOST":
        target = base.replace("127.0.0.1", "localhost") + OBSERVATORY
    with pytest.raises(FetchRefused, match="refused"):
        await allowed(base).get(f"{base}/redirect?to={target}")


async def test_a_redirect_within_the_allowed_host_is_followed(base: str) -> None:
    download = await allowed(base).get(f"{base}/redirect?to={OBSERVATORY}")
    assert download.url == base + OBSERVATORY


async def test_a_host_name_can_be_allow_listed_with_its_port(base: str) -> None:
    named = base.replace("127.0.0.1", "localhost")
    download = await allowed(named).get(named + OBSERVATORY)
    assert b"Velmora" in download.body


async def test_content_type_size_and_time_limits(base: str) -> None:
    with pytest.raises(FetchFailed, match="not a web page .application/pdf"):
        await allowed(base).get(base + "/file.pdf")
    huge = await allowed(base, max_bytes=100_000).get(base + "/huge")
    assert huge.truncated and len(huge.body) == 100_000
    with pytest.raises(FetchFailed, match="HTTP 404"):
        await allowed(base).get(base + "/pages/missing.html")
    with pytest.raises(FetchFailed, match="no complete answer within 0.5 s"):
        await allowed(base, timeout_s=0.5).get(base + "/slow/search")


async def test_extraction_keeps_the_article_and_drops_the_boilerplate(base: str, tmp_path: Path) -> None:
    reader = PageReader(allowed(base), PageCache(tmp_path), PageBudget(5, 60))

    page = await reader.read(base + OBSERVATORY)

    assert page.title == "Velmora Tidal Observatory opens on the Keswin coast"
    assert page.published == "2026-11-18"
    assert "Ilsabet Marrow" in page.text and "14.6 million euros" in page.text
    for boilerplate in ("cookies", "Subscribe", "All rights reserved", "Most read", "newsletter", "Privacy"):
        assert boilerplate not in page.text, boilerplate


async def test_passages_are_ranked_against_the_question(base: str, tmp_path: Path) -> None:
    reader = PageReader(allowed(base), PageCache(tmp_path), PageBudget(5, 60))
    page = await reader.read(base + OBSERVATORY)

    pieces = passages(page.text, size=300)
    best = rank(pieces, "Who is the observatory's director?", 1)[0]

    assert len(pieces) > 2 and "Ilsabet Marrow" in best.text


@pytest.mark.slow
async def test_the_cache_answers_again_and_the_budget_bounds_downloads(base: str, tmp_path: Path) -> None:
    budget = PageBudget(1, 300)
    reader = PageReader(allowed(base), PageCache(tmp_path), budget)
    first = await reader.read(base + OBSERVATORY)

    again = await PageReader(SafeFetcher(AddressGuard()), PageCache(tmp_path), PageBudget(0, 300)).read(
        base + OBSERVATORY
    )
    assert again == first, "served from the disk cache: no download, no budget, no address check"
    with pytest.raises(PageBudgetSpent, match="page budget .1 pages per run. is spent"):
        await reader.read(base + "/pages/kestrel-release.html")
