"""The tool index a run retrieves its candidates from, built in milliseconds when it can be.

The records are those of the run's catalogue (``tools/catalog/entries.py``); their ids hash their
text, so a vector computed once serves every later run. Vectors come from, in order:

1. the index ``aisearch tools index`` built (its exact-search cache, read without chromadb), whose
   synthetic queries (``aisearch tools augment``) the run's servers also take;
2. the run cache (``<tools dir>/run-vectors.npz``): records embedded by an earlier run;
3. the embedder, now, when at most ``max_embed`` records lack a vector (a first run over the
   bundled servers: about 20 short texts), added to the run cache.

When more lack one (a large catalogue never indexed) the run retrieves by BM25 alone over the
same records, and says so once in the log: ``aisearch tools index`` makes it dense.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.catalog.augment import cached_queries
from tools.catalog.entries import catalog_entries, fingerprint
from tools.catalog.index import DEFAULT_COLLECTION, ToolIndex
from tools.catalog.model import Catalog
from tools.catalog.paths import default_tools_dir, index_dir
from tools.catalog.tokens import tokenize
from tools.index.bm25 import BM25Index
from tools.index.dense import DenseIndex
from tools.index.embedder import DIMENSIONS, MODEL_NAME, TextEmbedder, shared_embedder
from tools.index.jsonfiles import read_json
from tools.index.search_files import load_vectors
from tools.index.store import IndexStore

log = logging.getLogger(__name__)
MAX_EMBED = 64  # records a run embeds itself before it falls back to BM25 alone


@dataclass
class BuiltIndex:
    """A run's tool index and whether it is dense (False: BM25 alone, vectors missing)."""

    index: ToolIndex
    dense: bool


class DeferredEmbedder:
    """MiniLM from ``factory`` (the document server's, say), made when a text is first embedded; the
    in-process MiniLM when the factory fails (logged)."""

    name = MODEL_NAME
    dimensions = DIMENSIONS

    def __init__(self, factory: Callable[[], TextEmbedder]) -> None:
        """Remember ``factory``; nothing is made yet."""
        self._factory = factory
        self._embedder: TextEmbedder | None = None

    def _get(self) -> TextEmbedder:
        if self._embedder is None:
            try:
                self._embedder = self._factory()
            except Exception as exc:  # noqa: BLE001 - any failure: the in-process model serves
                log.warning(
                    "the tool retriever's embedder is unavailable (%s); loading %s here", exc, MODEL_NAME
                )
                self._embedder = shared_embedder()
        return self._embedder

    def encode(
        self,
        texts: Sequence[str],
        *,
        threads: int | None = None,
        on_batch: Callable[[int], object] | None = None,
    ) -> Any:
        """Embed ``texts`` (normalised rows)."""
        return self._get().encode(texts, threads=threads, on_batch=on_batch)

    def encode_query(self, text: str) -> Any:
        """Embed one query."""
        return self._get().encode_query(text)


class RunIndex:
    """Builds (and keeps, per catalogue fingerprint) the run's tool index."""

    def __init__(
        self,
        embedder: TextEmbedder,
        *,
        root: Path | None = None,
        collection: str = DEFAULT_COLLECTION,
        max_embed: int = MAX_EMBED,
    ) -> None:
        """Prepare; nothing is read or loaded until :meth:`build`.

        Args:
            embedder: Embeds records and queries (MiniLM, the one ``aisearch tools index`` uses, or
                the document server's copy of it); a model loads only when a text is embedded.
            root: The tools directory (default ``$AISEARCH_TOOLS_DIR`` or ``~/.local/share/aisearch/tools``).
            collection: The collection ``aisearch tools index`` built for this catalogue.
            max_embed: The most records embedded in the run; more missing means BM25 alone.
        """
        self.embedder = embedder
        self.root = root or default_tools_dir()
        self.collection = collection
        self.max_embed = max_embed
        self._vectors: dict[str, Any] | None = None
        self._persisted_queries: dict[str, list[str]] = {}
        self._built: dict[str, BuiltIndex] = {}
        self._noted = False
        self._lock = threading.Lock()  # selections of concurrent requests build in worker threads

    def _embedder_name(self) -> str:
        return str(getattr(self.embedder, "name", None) or MODEL_NAME)

    @property
    def cache_path(self) -> Path:
        """The run cache of embedded records."""
        return self.root / "run-vectors.npz"

    def _load(self) -> dict[str, Any]:
        """Every known vector: the built index's, then the run cache's (same embedder only)."""
        if self._vectors is not None:
            return self._vectors
        import numpy as np

        vectors: dict[str, Any] = {}
        name = self._embedder_name()
        target = IndexStore(index_dir(self.root)).collection(self.collection)
        same = target.dir.exists() and target.state().get("embedder", MODEL_NAME) == name
        loaded = load_vectors(target.dir) if same else None
        if loaded:
            vectors.update(zip(loaded[1], loaded[2], strict=True))
            raw = read_json(target.dir / "entries.json", {}) or {}
            for item in sorted(raw.get("entries", []), key=lambda e: e.get("order", 0)):
                if item.get("kind") == "query":
                    self._persisted_queries.setdefault(item["server"], []).append(item["text"])
        if self.cache_path.exists():
            try:
                with np.load(self.cache_path, allow_pickle=False) as cache:
                    if str(cache["embedder"]) == name:
                        vectors.update(zip(cache["ids"].tolist(), cache["matrix"], strict=True))
            except (OSError, ValueError, KeyError) as exc:
                log.warning(
                    "the run's tool-vector cache %s is unreadable (%s); ignoring it", self.cache_path, exc
                )
        self._vectors = vectors
        return vectors

    def _save(self, new: dict[str, Any]) -> None:
        """Add ``new`` vectors to the run cache (atomically)."""
        import numpy as np

        try:
            previous: dict[str, Any] = {}
            if self.cache_path.exists():
                with np.load(self.cache_path, allow_pickle=False) as cache:
                    if str(cache["embedder"]) == self._embedder_name():
                        previous = dict(zip(cache["ids"].tolist(), cache["matrix"], strict=True))
            merged = {**previous, **new}
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = self.root / f".run-vectors.{os.getpid()}.{threading.get_ident()}.npz"
            with tmp.open("wb") as handle:
                np.savez(
                    handle,
                    ids=np.array(list(merged)),
                    matrix=np.asarray(list(merged.values()), dtype=np.float32).reshape(len(merged), -1),
                    embedder=np.array(self._embedder_name()),
                )
            tmp.replace(self.cache_path)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("could not write the run's tool-vector cache %s: %s", self.cache_path, exc)

    def build(self, catalog: Catalog) -> BuiltIndex:
        """The index of ``catalog`` (kept per fingerprint: the same catalogue costs nothing twice)."""
        with self._lock:
            return self._build(catalog)

    def _build(self, catalog: Catalog) -> BuiltIndex:
        import numpy as np

        known = self._load()
        synthetic = {**self._persisted_queries, **cached_queries(catalog, self.root)}
        synthetic = {server: queries for server, queries in synthetic.items() if server in catalog.servers}
        entries = catalog_entries(catalog, synthetic)
        fp = fingerprint(entries, self._embedder_name())
        if fp in self._built:
            return self._built[fp]
        missing = [entry for entry in entries if entry.id not in known]
        dense = len(missing) <= self.max_embed
        if missing and dense:
            log.info("tool index: embedding %d of %d records in this run", len(missing), len(entries))
            fresh = dict(
                zip((e.id for e in missing), self.embedder.encode([e.text for e in missing]), strict=True)
            )
            known.update(fresh)
            self._save(fresh)
        elif missing and not self._noted:
            self._noted = True
            log.warning(
                "tool retrieval by BM25 alone: %d of %d catalogue records have no vector; "
                "`aisearch tools index` embeds them once",
                len(missing),
                len(entries),
            )
        ids = [entry.id for entry in entries]
        if dense:
            matrix = np.asarray([known[pid] for pid in ids], dtype=np.float32).reshape(len(ids), -1)
        else:
            matrix = np.zeros((len(ids), DIMENSIONS), dtype=np.float32)
        index = ToolIndex(
            entries,
            DenseIndex(ids, matrix),
            BM25Index(ids, [tokenize(entry.text) for entry in entries]),
            self.embedder,
            fp,
            len(missing) if dense else 0,
        )
        self._built[fp] = BuiltIndex(index, dense)
        return self._built[fp]
