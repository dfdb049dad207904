"""The bundled ``websearch`` MCP server over stdio against the loopback SearxNG fixture, and how
aisearch configures and starts it (``[websearch]``, the environment, only the chosen key)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.settings import load_settings
from models.config import ConfigError
from tests.servers import web_fixture
from tools.hub import ToolHub
from tools.registry import bundled_connections
from tools.web.config import WebSearchConfig

OBSERVATORY = "/pages/velmora-observatory.html"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with web_fixture.running() as url:
        yield url


def websearch(config: WebSearchConfig) -> dict[str, dict]:
    """The connection aisearch itself would start for ``config`` (a real stdio server)."""
    return {"websearch": bundled_connections(config)["websearch"]}


@pytest.mark.slow
async def test_search_reads_the_top_pages_and_fetch_guards_addresses(base: str, tmp_path: Path) -> None:
    config = WebSearchConfig(searxng_url=base, allow_hosts=[base.removeprefix("http://")], cache_dir=tmp_path)
    async with ToolHub.open(websearch(config)) as hub:
        assert {"websearch.search", "websearch.fetch"} <= set(hub.specs)

        found = await hub.call("websearch.search", {"query": "Velmora observatory director"}, timeout_s=30)
        top = found.structured["results"][0]
        assert found.ok and top["url"] == top["source"] == base + OBSERVATORY
        assert top["published"] == "2026-11-18T08:30:00+00:00" and top["id"].startswith("w-")
        assert "Ilsabet Marrow" in top["text"], "the page was read: the snippet does not name the director"
        assert "Ilsabet Marrow" not in top["snippet"]

        page = await hub.call(
            "websearch.fetch", {"url": base + "/pages/kestrel-release.html", "query": "next release planned"},
            timeout_s=30,
        )  # fmt: skip
        assert page.ok and "March 2027" in page.structured["results"][0]["text"]

        for url, reason in [
            ("http://169.254.169.254/latest/meta-data/", "link-local"),
            (base.replace("127.0.0.1", "localhost") + OBSERVATORY, "loopback"),
            (f"{base}/redirect?to=http://10.0.0.7/", "private"),
        ]:
            refused = await hub.call("websearch.fetch", {"url": url}, timeout_s=30)
            assert not refused.ok and reason in (refused.error or "") and "refused" in (refused.error or "")


@pytest.mark.slow
async def test_a_dead_provider_is_a_clear_tool_error(tmp_path: Path) -> None:
    config = WebSearchConfig(searxng_url="http://127.0.0.1:9", cache_dir=tmp_path, timeout_s=2)
    async with ToolHub.open(websearch(config)) as hub:
        outcome = await hub.call("websearch.search", {"query": "anything"}, timeout_s=30)
    assert not outcome.ok
    assert "web search provider searxng at http://127.0.0.1:9 is unreachable" in (outcome.error or "")
    assert "Traceback" not in (outcome.error or "")


def test_websearch_is_off_until_configured_and_gets_only_its_key() -> None:
    assert "websearch" not in bundled_connections(WebSearchConfig())
    keyed = WebSearchConfig(provider="tavily", tavily_api_key="tv-secret", brave_api_key="br-secret")
    env = bundled_connections(keyed)["websearch"]["env"]
    assert env["TAVILY_API_KEY"] == "tv-secret" and env["AISEARCH_WEB_PROVIDER"] == "tavily"
    assert "BRAVE_API_KEY" not in env and "AISEARCH_SEARXNG_URL" not in env
    assert all(
        "tv-secret" not in str(c.get("env"))
        for n, c in bundled_connections(keyed).items()
        if n != "websearch"
    )


def test_the_config_file_and_the_environment_configure_it(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[websearch]\nsearxng_url = "http://search.lan:8888"\nallow_hosts = ["search.lan"]\n')

    from_file = load_settings(path, env={}).websearch
    from_env = load_settings(
        path, env={"AISEARCH_SEARXNG_URL": "http://127.0.0.1:8888", "AISEARCH_WEB_ALLOW_HOSTS": "a, b:80"}
    ).websearch

    assert from_file.enabled and from_file.chosen == "searxng" and from_file.allow_hosts == ["search.lan"]
    assert from_env.searxng_url == "http://127.0.0.1:8888" and from_env.allow_hosts == ["a", "b:80"]
    with pytest.raises(ConfigError, match=r"\[websearch\] \+ environment.*provider"):
        load_settings(path, env={"AISEARCH_WEB_PROVIDER": "bing"})
