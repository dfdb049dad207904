"""MCP server "websearch": web search over a configured provider, and pages read SSRF-safely.

Run alone with ``python -m tools.servers.websearch_server`` (stdio) or
``python -m tools.servers.websearch_server --transport streamable-http --port 8104``. It is
configured by the environment (``tools/web/config.py``): ``AISEARCH_SEARXNG_URL`` for a SearxNG
instance, or ``AISEARCH_WEB_PROVIDER`` with ``TAVILY_API_KEY``/``BRAVE_API_KEY``;
``AISEARCH_WEB_ALLOW_HOSTS`` names the hosts on private or loopback addresses it may fetch.
aisearch starts it only when web search is configured (``tools/registry.py``).

Tools:

* ``search``: the provider's results (title, URL, snippet, date) and, for the first ``read`` of
  them, the page's passages that best match the query, so one call brings page text to cite;
* ``fetch``: one page's main text, cut into passages ranked against a query.

Result and passage ids are derived from the URL, so the same page is the same source in every run.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from models.config import ConfigError
from tools.servers.common import OPEN_WORLD, serve, server_arg_parser
from tools.web.config import WebSearchConfig, web_config
from tools.web.pages import PageBudget, PageCache, PageReader, PageText, passages, rank
from tools.web.providers import NOT_CONFIGURED, SearchFailed, SearchProvider, WebResult, provider_for
from tools.web.safe_http import AddressGuard, FetchFailed, FetchRefused, SafeFetcher

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8104
MAX_RESULTS = 10
MAX_READ = 3
PASSAGES_PER_RESULT = 2
BUDGET_WINDOW_S = 300.0

mcp = FastMCP(
    "websearch",
    instructions=(
        "Search the web for current events, news, recent or live facts (releases, prices, results, "
        "weather) and anything the local documents do not hold; results carry their URL and date, "
        "and `fetch` reads a page's main text."
    ),
    log_level="WARNING",
)


def page_id(url: str, index: int | None = None) -> str:
    """A stable id for a page (or one of its passages)."""
    key = url if index is None else f"{url}#{index}"
    return "w-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:10]


class WebSearch:
    """The server's provider and page reader, built from the settings."""

    def __init__(self, config: WebSearchConfig) -> None:
        """Search with the configured provider; read pages within the page budget."""
        self.config = config
        self.provider: SearchProvider | None = provider_for(config) if config.enabled else None
        fetcher = SafeFetcher(
            AddressGuard(config.allow_hosts), timeout_s=config.timeout_s, max_bytes=config.max_page_bytes
        )
        budget = PageBudget(config.max_pages, BUDGET_WINDOW_S)
        self.reader = PageReader(fetcher, PageCache(config.cache_dir), budget)

    async def search(self, query: str, k: int, read: int) -> dict[str, Any]:
        """The provider's results for ``query``; the first ``read`` pages read and ranked."""
        if not query.strip():
            raise ToolError("the query is empty")
        if self.provider is None:
            raise ToolError(NOT_CONFIGURED)
        try:
            found = await self.provider.search(query, max(1, min(k, MAX_RESULTS)))
        except SearchFailed as exc:
            raise ToolError(str(exc)) from None
        reads = await asyncio.gather(
            *(self._best_passages(result.url, query) for result in found[: max(0, min(read, MAX_READ))])
        )
        results = []
        for position, result in enumerate(found):
            item = _result_item(result)
            if position < len(reads):
                text, note = reads[position]
                if text:
                    item["text"] = text
                else:
                    item["unread"] = note
            results.append(item)
        return {"query": query, "provider": self.provider.name, "results": results}

    async def _best_passages(self, url: str, query: str) -> tuple[str, str]:
        """The page's passages that match ``query`` best, or ``("", why not)``."""
        try:
            page = await self.reader.read(url)
        except (FetchRefused, FetchFailed) as exc:
            logger.info("page not read: %s", exc)
            return "", str(exc)
        best = sorted(rank(passages(page.text), query, PASSAGES_PER_RESULT), key=lambda p: p.index)
        return "\n…\n".join(passage.text for passage in best), ""

    async def fetch(self, url: str, query: str, k: int) -> dict[str, Any]:
        """One page's passages ranked against ``query`` (page order without one)."""
        try:
            page = await self.reader.read(url.strip())
        except (FetchRefused, FetchFailed) as exc:
            raise ToolError(str(exc)) from None
        ranked = rank(passages(page.text), query, max(1, min(k, MAX_RESULTS)))
        return {
            "url": page.url,
            "title": page.title,
            "published": page.published,
            "results": [_passage_item(page, passage.index, passage.text) for passage in ranked],
        }


def _result_item(result: WebResult) -> dict[str, Any]:
    return {
        "id": page_id(result.url),
        "title": result.title,
        "url": result.url,
        "source": result.url,
        "published": result.published,
        "snippet": result.snippet,
    }


def _passage_item(page: PageText, index: int, text: str) -> dict[str, Any]:
    return {
        "id": page_id(page.url, index),
        "title": page.title,
        "url": page.url,
        "source": page.url,
        "published": page.published,
        "text": text,
    }


_service: WebSearch | None = None


def service() -> WebSearch:
    """The server's service, configured from the environment on first use."""
    global _service
    if _service is None:
        _service = WebSearch(web_config({}, where=""))
    return _service


@mcp.tool(annotations=OPEN_WORLD)
async def search(query: str, k: int = 5, read: int = 2) -> dict[str, Any]:
    """Search the web: each result's title, URL, snippet and publication date, with the best passages
    of the first `read` result pages, so the answer can cite the page itself.

    For news, current events, recent releases, prices, results and anything the local documents do
    not cover. Cite results by title and URL; prefer recent ones for questions about the present.

    Args:
        query: Keywords or a question (one topic per search works best).
        k: Number of results (1-10, default 5).
        read: How many of the first results to open and read (0-3, default 2).
    """
    return await service().search(query, k, read)


@mcp.tool(annotations=OPEN_WORLD)
async def fetch(url: str, query: str = "", k: int = 3) -> dict[str, Any]:
    """Read a web page (an http or https URL, usually a search result's): its main text without
    navigation or ads, cut into passages, the ones that best match `query` first.

    Addresses on the local network or this machine are refused unless allow-listed.

    Args:
        url: The page's address.
        query: What to look for on the page (ranks its passages; empty: the page from the top).
        k: Number of passages to return (1-10, default 3).
    """
    return await service().fetch(url, query, k)


def main(argv: list[str] | None = None) -> None:
    """Run the "websearch" MCP server over stdio (default) or streamable HTTP.

    Args:
        argv: Command-line arguments (defaults to ``sys.argv[1:]``).
    """
    parser = server_arg_parser("MCP server 'websearch': search the web and read pages.", DEFAULT_PORT)
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    try:
        service()
    except ConfigError as exc:
        parser.exit(2, f"websearch: {exc}\n")
    serve(mcp, args)


if __name__ == "__main__":
    main()
