"""Reading a web page: its main text (trafilatura), cut into passages ranked against the task, with
an on-disk cache and a page budget.

The main text is what trafilatura keeps of the HTML: navigation, footers, cookie banners and link
lists go. Passages are paragraphs packed to about ``PASSAGE_CHARS`` characters and ranked by BM25
against the question, as the document index ranks its passages by keyword. A page is downloaded
once per ``CACHE_TTL_S`` (the cache, under ``~/.cache/aisearch/web`` by default, holds the extracted
text, not the HTML); the downloads of a server process are bounded by :class:`PageBudget`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

import trafilatura
from rank_bm25 import BM25Okapi

from tools.catalog.tokens import STOPWORDS
from tools.web.safe_http import Download, FetchFailed, SafeFetcher

log = logging.getLogger(__name__)

PASSAGE_CHARS = 700
CACHE_TTL_S = 24 * 3600
MIN_TEXT_CHARS = 40
WORD = re.compile(r"\w+")
CONTENT_WORD = re.compile(r"[^\W_]{3,}")


@dataclass(frozen=True)
class PageText:
    """A page's main text and what it says about itself."""

    url: str
    title: str
    text: str
    published: str | None
    fetched_at: float


@dataclass(frozen=True)
class Passage:
    """A ranked piece of a page."""

    index: int
    text: str
    score: float


def extract(download: Download) -> PageText:
    """The main text, title and date of a downloaded page.

    Raises:
        FetchFailed: The page holds no readable text.
    """
    if download.content_type == "text/plain":
        text = download.body.decode(download.charset or "utf-8", errors="replace").strip()
        title, published = text.split("\n", 1)[0][:120], None
    else:
        found = trafilatura.extract(
            download.body,
            url=download.url,
            output_format="json",
            with_metadata=True,
            include_comments=False,
            include_tables=True,
        )
        data = json.loads(found) if found else {}
        text = (data.get("text") or "").strip()
        title, published = (data.get("title") or "").strip(), data.get("date") or None
    if len(text) < MIN_TEXT_CHARS:
        raise FetchFailed(f"{download.url}: no readable text on the page")
    return PageText(download.url, title or download.url, text, published, time.time())


def passages(text: str, size: int = PASSAGE_CHARS) -> list[str]:
    """Paragraphs packed into passages of about ``size`` characters (a longer paragraph alone)."""
    packed: list[str] = []
    current = ""
    for paragraph in (" ".join(line.split()) for line in text.split("\n")):
        if not paragraph:
            continue
        if current and len(current) + len(paragraph) + 1 > size:
            packed.append(current)
            current = paragraph
        else:
            current = f"{current}\n{paragraph}" if current else paragraph
    if current:
        packed.append(current)
    return packed


def content_words(text: str) -> set[str]:
    """Lower-cased words of three or more letters or digits, common function words dropped."""
    return {word for word in CONTENT_WORD.findall(text.lower()) if word not in STOPWORDS}


def rank(pieces: list[str], query: str, k: int) -> list[Passage]:
    """The ``k`` passages that match ``query`` best (BM25 over content words), in page order when
    nothing matches (the start of a page is its summary)."""
    if not pieces:
        return []
    terms = sorted(content_words(query))
    if not terms:
        return [Passage(i, piece, 0.0) for i, piece in enumerate(pieces[:k])]
    corpus = [[word.lower() for word in WORD.findall(piece)] for piece in pieces]
    scores = BM25Okapi(corpus).get_scores(terms) if len(pieces) > 1 else [1.0]
    overlap = [len(content_words(piece) & set(terms)) for piece in pieces]
    order = sorted(range(len(pieces)), key=lambda i: (-overlap[i], -float(scores[i]), i))
    return [Passage(i, pieces[i], round(float(scores[i]), 3)) for i in order[:k]]


class PageCache:
    """Extracted pages on disk, one JSON file per URL, fresh for ``ttl_s`` seconds."""

    def __init__(self, folder: Path, ttl_s: float = CACHE_TTL_S) -> None:
        """Keep pages in ``folder`` (created on first write)."""
        self.folder = folder
        self.ttl_s = ttl_s

    def _path(self, url: str) -> Path:
        return self.folder / f"{hashlib.sha256(url.encode('utf-8')).hexdigest()[:32]}.json"

    def get(self, url: str) -> PageText | None:
        """The cached page of ``url`` when fresh."""
        path = self._path(url)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            page = PageText(**data)
        except (OSError, ValueError, TypeError):
            return None
        return page if time.time() - page.fetched_at < self.ttl_s else None

    def put(self, url: str, page: PageText) -> None:
        """Store ``page`` as what ``url`` gives (a cache that cannot be written is logged, not fatal)."""
        path = self._path(url)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(".tmp")
            temporary.write_text(json.dumps(asdict(page), ensure_ascii=False), encoding="utf-8")
            temporary.replace(path)
        except OSError as exc:
            log.warning("web page cache %s not written: %s", self.folder, exc)


class PageBudget:
    """At most ``max_pages`` downloads in any ``window_s`` seconds (cache hits are free)."""

    def __init__(self, max_pages: int, window_s: float) -> None:
        """Allow ``max_pages`` downloads per ``window_s`` seconds."""
        self.max_pages = max_pages
        self.window_s = window_s
        self.taken: deque[float] = deque()

    def take(self) -> bool:
        """Count one download, or say False when the budget is spent."""
        now = time.monotonic()
        while self.taken and now - self.taken[0] > self.window_s:
            self.taken.popleft()
        if len(self.taken) >= self.max_pages:
            return False
        self.taken.append(now)
        return True


class PageBudgetSpent(FetchFailed):
    """The page budget allows no more downloads for now."""


class PageReader:
    """Pages read through the cache, the budget and the SSRF-safe fetcher."""

    def __init__(self, fetcher: SafeFetcher, cache: PageCache, budget: PageBudget) -> None:
        """Read with ``fetcher``, remembering pages in ``cache``, within ``budget``."""
        self.fetcher, self.cache, self.budget = fetcher, cache, budget

    async def read(self, url: str) -> PageText:
        """The main text of ``url``, from the cache when fresh.

        Raises:
            FetchRefused: Where the URL leads is not allowed.
            FetchFailed: The download or extraction failed, or the budget is spent.
        """
        cached = self.cache.get(url)
        if cached is not None:
            return cached
        if not self.budget.take():
            raise PageBudgetSpent(f"{url}: the page budget ({self.budget.max_pages} pages per run) is spent")
        page = extract(await self.fetcher.get(url))
        self.cache.put(url, page)
        return page
