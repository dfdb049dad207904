"""Web search providers behind one result type: SearxNG's JSON API, Tavily and Brave.

* SearxNG (self-hosted metasearch): ``GET {base}/search?q=…&format=json``; results with ``url``,
  ``title``, ``content`` and ``publishedDate``. The instance must allow the ``json`` format
  (``search.formats`` in its ``settings.yml``).
* Tavily: ``POST https://api.tavily.com/search`` with ``Authorization: Bearer KEY``.
* Brave: ``GET https://api.search.brave.com/res/v1/web/search`` with ``X-Subscription-Token: KEY``.

Each provider's key goes to that provider only. The provider URLs are configured by the user, not
chosen by a model, so they are not SSRF-checked (a SearxNG on loopback is the common case).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import httpx

from tools.web.config import WebSearchConfig

log = logging.getLogger(__name__)

TAVILY_URL = "https://api.tavily.com/search"
BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
NOT_CONFIGURED = (
    "web search is not configured: set AISEARCH_SEARXNG_URL (or a [websearch] table in the config "
    "file; TAVILY_API_KEY or BRAVE_API_KEY for the keyed providers)"
)


@dataclass(frozen=True)
class WebResult:
    """One search result: where, what it is called, what the engine quotes, when it was published."""

    url: str
    title: str
    snippet: str
    published: str | None = None
    engine: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The result as plain data."""
        return asdict(self)


class SearchFailed(Exception):
    """The provider could not answer: unreachable, too slow, an HTTP error or a malformed reply."""


class SearchProvider(Protocol):
    """Anything that searches the web."""

    name: str

    async def search(self, query: str, k: int) -> list[WebResult]:
        """The first ``k`` results for ``query``."""
        ...


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value else ""


async def _json(name: str, request: httpx.Request, timeout_s: float) -> Any:
    """Send ``request`` and parse its JSON answer; every failure is one :class:`SearchFailed` line."""
    where = f"{name} at {request.url.scheme}://{request.url.netloc.decode()}"
    try:
        async with httpx.AsyncClient(timeout=timeout_s, trust_env=False) as client:
            response = await client.send(request)
    except httpx.TimeoutException:
        raise SearchFailed(f"web search provider {where} did not answer within {timeout_s:g} s") from None
    except httpx.HTTPError as exc:
        raise SearchFailed(
            f"web search provider {where} is unreachable ({type(exc).__name__}: {exc})"
        ) from None
    if response.status_code in (401, 403):
        raise SearchFailed(
            f"web search provider {where} refused the request (HTTP {response.status_code}: check the key or the instance's allowed formats)"
        )
    if response.status_code >= 400:
        raise SearchFailed(f"web search provider {where} answered HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise SearchFailed(f"web search provider {where} did not answer JSON") from None


def _results(name: str, items: Any) -> list[dict[str, Any]]:
    if not isinstance(items, list):
        raise SearchFailed(f"web search provider {name} answered without a result list")
    return [item for item in items if isinstance(item, dict) and item.get("url")]


class SearxNG:
    """A SearxNG instance's JSON API."""

    name = "searxng"

    def __init__(self, base_url: str, *, timeout_s: float = 10.0) -> None:
        """``base_url``: the instance (``http://127.0.0.1:8888``; ``/search`` is added)."""
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s

    async def search(self, query: str, k: int) -> list[WebResult]:
        """The first ``k`` results of ``GET {base}/search?q=…&format=json``."""
        request = httpx.Request(
            "GET", f"{self.base_url}/search", params={"q": query, "format": "json"},
            headers={"Accept": "application/json"},
        )  # fmt: skip
        data = await _json(self.name, request, self.timeout_s)
        items = _results(self.name, data.get("results") if isinstance(data, dict) else None)
        unresponsive = data.get("unresponsive_engines") if isinstance(data, dict) else None
        if not items and unresponsive:
            log.warning("searxng: no results; engines that did not answer: %s", unresponsive)
        return [
            WebResult(
                url=str(item["url"]),
                title=_text(item.get("title")) or str(item["url"]),
                snippet=_text(item.get("content")),
                published=_text(item.get("publishedDate")) or None,
                engine=_text(item.get("engine")),
            )
            for item in items[:k]
        ]


class Tavily:
    """Tavily's search API (keyed)."""

    name = "tavily"

    def __init__(self, api_key: str, *, timeout_s: float = 10.0, url: str = TAVILY_URL) -> None:
        """``api_key``: sent to Tavily only, as a bearer token."""
        self.api_key, self.timeout_s, self.url = api_key, timeout_s, url

    async def search(self, query: str, k: int) -> list[WebResult]:
        """The first ``k`` results of ``POST /search``."""
        request = httpx.Request(
            "POST", self.url, json={"query": query, "max_results": k},
            headers={"Authorization": f"Bearer {self.api_key}"},
        )  # fmt: skip
        data = await _json(self.name, request, self.timeout_s)
        items = _results(self.name, data.get("results") if isinstance(data, dict) else None)
        return [
            WebResult(
                url=str(item["url"]),
                title=_text(item.get("title")) or str(item["url"]),
                snippet=_text(item.get("content")),
                published=_text(item.get("published_date")) or None,
                engine=self.name,
            )
            for item in items[:k]
        ]


class Brave:
    """Brave's web search API (keyed)."""

    name = "brave"

    def __init__(self, api_key: str, *, timeout_s: float = 10.0, url: str = BRAVE_URL) -> None:
        """``api_key``: sent to Brave only, as ``X-Subscription-Token``."""
        self.api_key, self.timeout_s, self.url = api_key, timeout_s, url

    async def search(self, query: str, k: int) -> list[WebResult]:
        """The first ``k`` results of ``GET /res/v1/web/search``."""
        request = httpx.Request(
            "GET", self.url, params={"q": query, "count": k},
            headers={"Accept": "application/json", "X-Subscription-Token": self.api_key},
        )  # fmt: skip
        data = await _json(self.name, request, self.timeout_s)
        web = data.get("web") if isinstance(data, dict) else None
        items = _results(self.name, (web or {}).get("results", []))
        return [
            WebResult(
                url=str(item["url"]),
                title=_text(item.get("title")) or str(item["url"]),
                snippet=_text(item.get("description")),
                published=_text(item.get("page_age") or item.get("age")) or None,
                engine=self.name,
            )
            for item in items[:k]
        ]


def provider_for(config: WebSearchConfig) -> SearchProvider:
    """The provider the settings choose.

    Raises:
        SearchFailed: No provider is configured (no SearxNG URL, no key of the named provider).
    """
    chosen = config.chosen
    if not config.enabled or chosen is None:
        raise SearchFailed(NOT_CONFIGURED)
    if chosen == "searxng":
        return SearxNG(config.searxng_url, timeout_s=config.timeout_s)
    if chosen == "tavily":
        return Tavily(config.key("tavily"), timeout_s=config.timeout_s)
    return Brave(config.key("brave"), timeout_s=config.timeout_s)
