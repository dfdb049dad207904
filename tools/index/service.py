"""The document-search service behind the ``docsearch`` MCP server: search, read, and the
default Python-documentation collection built in the background on first start."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from tools.index.embedder import Embedder, shared_embedder
from tools.index.errors import EmptyIndexError, IndexBuildingError, UnknownPassageError
from tools.index.ingest import IngestReport, index_sources
from tools.index.paths import DEFAULT_COLLECTION, validate_collection_name
from tools.index.rerank import ListwiseReranker
from tools.index.search import Hit, Searcher
from tools.index.snippets import SNIPPET_CHARS, snippet
from tools.index.stdlib_corpus import in_default_scope, stdlib_sources
from tools.index.store import CollectionStore, IndexStore

log = logging.getLogger(__name__)

MAX_K = 20
MAX_QUERY_CHARS = 1000


def build_default_collection(
    store: IndexStore,
    name: str = DEFAULT_COLLECTION,
    *,
    embedder: Embedder | None = None,
    show_progress: bool = False,
    on_progress: Any = None,
) -> IngestReport:
    """Index the Python standard library documentation (pydoc topics and module docstrings)."""
    return index_sources(
        store.collection(name),
        stdlib_sources(),
        in_scope=in_default_scope,
        embedder=embedder,
        show_progress=show_progress,
        on_progress=on_progress,
    )


def default_build_needed(store: IndexStore, name: str = DEFAULT_COLLECTION) -> bool:
    """Whether collection ``name`` is missing (or was left half-built by a dead process)."""
    collection = store.collection(name)
    if not collection.exists():
        return True
    return collection.state().get("status") == "building" and not collection.is_being_written()


class DefaultBuild:
    """State of the background build of the default collection (thread-safe reads)."""

    def __init__(self) -> None:
        """Nothing started yet."""
        self.done = 0
        self.total = 0
        self.state = "idle"  # idle | building | ready | failed
        self.error = ""
        self.started = 0.0
        self.seconds = 0.0
        self.report: IngestReport | None = None
        self.thread: threading.Thread | None = None

    def progress(self, done: int, total: int) -> None:
        """Record embedding progress."""
        self.done, self.total = done, total

    def describe(self) -> str:
        """``"n of m passages"`` or what the build is doing before embedding starts."""
        if self.total:
            return f"{self.done} of {self.total} passages embedded"
        return "reading the standard library documentation and loading the embedding model"


class DocSearch:
    """Search and read passages of the collections in one index directory."""

    def __init__(
        self,
        store: IndexStore | None = None,
        *,
        default_collection: str = DEFAULT_COLLECTION,
        build_default: bool = True,
        embedder: Embedder | None = None,
        reranker: ListwiseReranker | None = None,
    ) -> None:
        """Serve ``store``; ``build_default`` allows building the default collection when it is missing."""
        self.store = store or IndexStore()
        self.default_collection = default_collection
        self.build_default = build_default
        self.embedder = embedder or shared_embedder()
        self.reranker = reranker
        self.default_build = DefaultBuild()
        self._searchers: dict[str, Searcher] = {}
        self._lock = threading.Lock()

    # -- the default collection ---------------------------------------------------------------
    def needs_default_build(self) -> bool:
        """Whether the default collection is missing (or was left half-built by a dead process)."""
        return default_build_needed(self.store, self.default_collection)

    def start_default_build(self) -> bool:
        """Build the default collection in a background thread if it is missing; True if started."""
        with self._lock:
            if not self.build_default or self.default_build.state == "building":
                return False
            if not self.needs_default_build():
                return False
            build = self.default_build
            build.state, build.started, build.done, build.total = "building", time.monotonic(), 0, 0
            build.thread = threading.Thread(
                target=self._run_default_build, name="docsearch-default", daemon=True
            )
            build.thread.start()
            return True

    def _run_default_build(self) -> None:
        build = self.default_build
        try:
            report = build_default_collection(
                self.store, self.default_collection, embedder=self.embedder, on_progress=build.progress
            )
        except Exception as exc:  # noqa: BLE001 - reported to every later search
            log.exception("building the default collection failed")
            build.state, build.error = "failed", f"{type(exc).__name__}: {exc}"
        else:
            build.report, build.state = report, "ready"
            log.warning("default collection %r built: %s", self.default_collection, report.summary())
        build.seconds = time.monotonic() - build.started

    def wait_for_default(self, timeout_s: float | None = None) -> bool:
        """Block until a running default build ends; True if it ended (or none was running)."""
        thread = self.default_build.thread
        if thread is not None:
            thread.join(timeout_s)
            return not thread.is_alive()
        return True

    def warm_up(self) -> None:
        """Load the embedder and the default collection's BM25 and chromadb handles (call it in a
        background thread right after start, so the first search does not pay for loading)."""
        started = time.monotonic()
        try:
            self.embedder.warm_up()
            if (
                self.default_build.state != "building"
                and self.store.collection(self.default_collection).exists()
            ):
                self._searcher(self.default_collection).refresh()
        except Exception as exc:  # noqa: BLE001 - warm-up is best effort; searches report real errors
            log.info("warm-up skipped: %s", exc)
        log.info("warm-up done in %.1f s", time.monotonic() - started)

    def start_warm_up(self) -> threading.Thread:
        """Run :meth:`warm_up` in a daemon thread."""
        thread = threading.Thread(target=self.warm_up, name="docsearch-warmup", daemon=True)
        thread.start()
        return thread

    # -- collections --------------------------------------------------------------------------
    def _collection(self, name: str) -> CollectionStore:
        validate_collection_name(name)
        if name == self.default_collection:
            build = self.default_build
            if build.state == "building":
                raise IndexBuildingError(
                    f"the default index {name!r} (Python standard library documentation) is being built "
                    f"({build.describe()}); try again in a few seconds"
                )
            if build.state == "failed":
                raise EmptyIndexError(
                    f"building the default index {name!r} failed ({build.error}); "
                    "run `aisearch index --default` to retry, or `aisearch index PATH` for your own documents"
                )
            if self.start_default_build():
                return self._collection(name)
        collection = self.store.collection(name)
        if name == self.default_collection and not collection.exists():
            raise EmptyIndexError(
                f"the default index {name!r} is empty: run `aisearch index PATH` to index your documents, "
                "or `aisearch index --default` for the Python standard library documentation"
            )
        state = collection.state()
        first_build = int(state.get("generation", 0)) == 0
        if state.get("status") == "building" and first_build and collection.is_being_written():
            raise IndexBuildingError(
                f"the collection {name!r} is being built by another process; try again shortly"
            )  # a re-index of a built collection keeps serving the previous generation meanwhile
        try:
            return self.store.require(name)
        except EmptyIndexError as exc:
            if name == self.default_collection:
                raise EmptyIndexError(
                    f"{exc}; or run `aisearch index --default` for the Python standard library documentation"
                ) from None
            raise

    def _searcher(self, name: str) -> Searcher:
        collection = self._collection(name)
        with self._lock:
            searcher = self._searchers.get(name)
            if searcher is None:
                searcher = self._searchers[name] = Searcher(collection, self.embedder, self.reranker)
            return searcher

    def collections(self) -> list[dict[str, Any]]:
        """Known collections with their passage counts."""
        return [
            {"name": name, "passages": int(self.store.collection(name).state().get("passages", 0))}
            for name in self.store.names()
        ]

    # -- tools --------------------------------------------------------------------------------
    def search(
        self, query: str, k: int = 5, collection: str = DEFAULT_COLLECTION, full: bool = False
    ) -> dict[str, Any]:
        """Hybrid search (BM25 + dense, fused with RRF; LLM-reranked when configured).

        Returns:
            ``{"query", "collection", "results": [{"id", "title", "snippet", "source", "score"}]}``,
            with at most 20 results and snippets of at most about 600 characters (with ``full``,
            each result also carries the passage's whole ``text``). A result the dense ranker saw
            also carries ``similarity``: the cosine of its MiniLM embedding to the query's (about
            0.5 and above: on topic; below 0.3: unrelated).
        """
        query = _clean_query(query)
        if not query:
            raise ValueError("the query is empty: pass a question or keywords to search for")
        searcher = self._searcher(collection)
        hits = searcher.rank(query, _clamp_k(k), "hybrid", rerank=self.reranker is not None)
        return {"query": query, "collection": collection, "results": _results(searcher, hits, query, full)}

    def follow(
        self,
        passage_ids: list[str],
        query: str = "",
        k: int = 2,
        collection: str = DEFAULT_COLLECTION,
        full: bool = False,
    ) -> dict[str, Any]:
        """The passages of the documents that the given passages (and the query) name by title.

        The next hop of a multi-hop question without a model call (``Searcher.linked``).

        Returns:
            The shape of :meth:`search`; ``results`` is empty when nothing they name is indexed.

        Raises:
            UnknownPassageError: When none of ``passage_ids`` is in the collection.
        """
        ids = [str(pid).strip() for pid in (passage_ids or []) if str(pid).strip()][:MAX_K]
        query = _clean_query(query)
        searcher = self._searcher(collection)
        if not ids or not searcher.fetch(ids):
            raise UnknownPassageError(
                f"none of the passage ids {ids!r} is in collection {collection!r}; "
                "pass ids from the results of `search` (with the same collection)"
            )
        hits = searcher.linked(query, ids, _clamp_k(k))
        return {"query": query, "collection": collection, "results": _results(searcher, hits, query, full)}

    def read(self, passage_id: str, collection: str = DEFAULT_COLLECTION) -> dict[str, Any]:
        """The full text of one passage: ``{"id", "title", "source", "text"}`` (plus its section).

        Raises:
            UnknownPassageError: When the id is not in the collection.
        """
        passage_id = str(passage_id or "").strip()
        searcher = self._searcher(collection)
        passage = searcher.fetch([passage_id]).get(passage_id) if passage_id else None
        if passage is None:
            raise UnknownPassageError(
                f"no passage with id {passage_id!r} in collection {collection!r}; "
                "use an id from the results of `search` (with the same collection)"
            )
        result = {
            "id": passage_id,
            "title": passage.get("title", ""),
            "source": passage.get("source", ""),
            "text": passage["text"],
        }
        if passage.get("section") and passage["section"] != result["title"]:
            result["section"] = passage["section"]
        return result


def _clean_query(query: str) -> str:
    return " ".join(str(query or "").split())[:MAX_QUERY_CHARS]


def _clamp_k(k: int) -> int:
    return max(1, min(int(k), MAX_K))


def _results(searcher: Searcher, hits: list[Hit], query: str, full: bool) -> list[dict[str, Any]]:
    """Search results for ``hits``: id, title, snippet, source, score (and similarity, section, text)."""
    passages = searcher.fetch([hit.id for hit in hits])
    results = []
    for hit in hits:
        passage = passages.get(hit.id)
        if passage is None:
            continue
        item = {
            "id": hit.id,
            "title": passage.get("title", ""),
            "snippet": snippet(passage["text"], query, SNIPPET_CHARS),
            "source": passage.get("source", ""),
            "score": round(hit.score, 5),
        }
        if hit.similarity is not None:
            item["similarity"] = round(hit.similarity, 3)
        section = passage.get("section", "")
        if section and section != item["title"]:
            item["section"] = section
        if full:
            item["text"] = passage["text"]
        results.append(item)
    return results
