"""The on-disk index: one chromadb client per directory, and per collection a manifest, a state
file and the BM25 token lists.

Layout under the index directory::

    chroma/                         chromadb PersistentClient (cosine HNSW, our own embeddings),
                                    or none: a chroma server at $AISEARCH_CHROMA_URL (chroma_client.py)
    collections/<name>/state.json   generation, passage count, status, embedder, last build
    collections/<name>/manifest.json  source (file path or pseudo-source) -> digest and passage ids
    collections/<name>/bm25.json    passage ids and their BM25 tokens, tagged with the generation
    collections/<name>/vectors.npy  the embedding matrix for exact search (+ vectors.json: ids, generation)
    locks/<name>.lock               one writer per collection at a time

With a chroma server the collections' files stay here: the index directory is shared by every process
that reads or writes the index (the same machine, or a shared path); a missing or stale
``bm25.json`` or ``vectors.npy`` is rebuilt from the server, as from the embedded chromadb.

The BM25 tokens and the vector matrix are written and read by ``tools/index/search_files.py``.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from tools.index.bm25 import BM25Index, tokenize
from tools.index.chroma_client import open_client
from tools.index.dense import EXACT_LIMIT, DenseIndex
from tools.index.documents import embedding_text
from tools.index.embedder import DIMENSIONS, MODEL_NAME
from tools.index.errors import EmptyIndexError, UnknownCollectionError
from tools.index.jsonfiles import read_json, write_json
from tools.index.manifest import Manifest
from tools.index.paths import default_index_dir, validate_collection_name
from tools.index.search_files import load_bm25_tokens, load_vectors

log = logging.getLogger(__name__)

CHROMA_BATCH = 1000
READ_PAGE = 5000  # rows per chromadb read of a whole collection: one read of 100k rows overflows
# SQLite's limit on bound variables ("too many SQL variables")
LOCK_TIMEOUT_S = 3600.0
_WRITERS: dict[str, int] = {}  # index root -> writes in progress in this process
_WRITERS_LOCK = threading.Lock()


class StoredRow(Protocol):
    """What chromadb keeps of a passage or a catalogue entry."""

    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...

    def metadata(self) -> dict[str, str | int]:
        """Flat metadata (no ``None`` values)."""
        ...


class CollectionStore:
    """One named collection: chromadb vectors and documents, manifest, state and BM25 tokens."""

    def __init__(self, index: IndexStore, name: str) -> None:
        """Address the collection ``name`` inside ``index`` (nothing is created yet)."""
        self.index = index
        self.name = validate_collection_name(name)
        self.dir = index.root / "collections" / name
        self._chroma: Any = None
        self._epoch = -1

    # -- files ---------------------------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        """Path of ``state.json``."""
        return self.dir / "state.json"

    @property
    def manifest_path(self) -> Path:
        """Path of ``manifest.json``."""
        return self.dir / "manifest.json"

    def exists(self) -> bool:
        """Whether the collection has been created (it may still be empty)."""
        return self.state_path.exists()

    def state(self) -> dict[str, Any]:
        """The collection's state (``{}`` if it does not exist)."""
        state: dict[str, Any] = read_json(self.state_path, {})
        return state

    def write_state(self, **changes: Any) -> dict[str, Any]:
        """Update fields of the state file and return the new state."""
        state = {
            "name": self.name,
            "embedder": MODEL_NAME,
            "dimensions": DIMENSIONS,
            **self.state(),
            **changes,
        }
        state["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        write_json(self.state_path, state)
        self.index.local_generations[self.name] = int(state.get("generation", 0))
        return state

    def manifest(self) -> Manifest:
        """The collection's manifest."""
        return Manifest.load(self.manifest_path)

    @contextmanager
    def write_lock(self, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """Hold the collection's writer lock (waits for another indexer, logging that it does)."""
        from filelock import FileLock, Timeout

        path = self.index.root / "locks" / f"{self.name}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            log.warning("another process is indexing collection %r; waiting for it", self.name)
            lock.acquire(timeout=timeout_s)
        try:
            yield
        finally:
            lock.release()

    def is_being_written(self) -> bool:
        """Whether some process (this one included) holds the writer lock right now."""
        from filelock import FileLock, Timeout

        path = self.index.root / "locks" / f"{self.name}.lock"
        if not path.exists():
            return False
        lock = FileLock(str(path))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return True
        lock.release()
        return False

    # -- chromadb ------------------------------------------------------------------------------
    def chroma(self) -> Any:
        """The chromadb collection (created on first use; cosine space; no embedding function)."""
        if self._chroma is None or self._epoch != self.index.epoch:
            client = self.index.client()
            self._chroma = client.get_or_create_collection(
                self.name, metadata={"hnsw:space": "cosine"}, embedding_function=None
            )
            self._epoch = self.index.epoch
        return self._chroma

    def add(self, passages: Sequence[StoredRow], embeddings: Any) -> None:
        """Upsert passages with their embeddings (rows of ``embeddings`` match ``passages``)."""
        collection = self.chroma()
        for start in range(0, len(passages), CHROMA_BATCH):
            batch = passages[start : start + CHROMA_BATCH]
            collection.upsert(
                ids=[p.id for p in batch],
                embeddings=embeddings[start : start + len(batch)],
                documents=[p.text for p in batch],
                metadatas=[p.metadata() for p in batch],
            )

    def delete(self, ids: Sequence[str]) -> None:
        """Remove passages by id (unknown ids are ignored)."""
        ids = list(ids)
        for start in range(0, len(ids), CHROMA_BATCH):
            self.chroma().delete(ids=ids[start : start + CHROMA_BATCH])

    def existing(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored in chromadb."""
        found: set[str] = set()
        ids = list(ids)
        for start in range(0, len(ids), CHROMA_BATCH):
            found.update(self.chroma().get(ids=ids[start : start + CHROMA_BATCH], include=[])["ids"])
        return found

    def stored_rows(self, ids: Sequence[str]) -> dict[str, tuple[str, Any]]:
        """Stored passages by id as ``(embedding text, embedding)`` (unknown ids are left out)."""
        rows: dict[str, tuple[str, Any]] = {}
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), CHROMA_BATCH):
            result = self.chroma().get(
                ids=ids[start : start + CHROMA_BATCH], include=["documents", "metadatas", "embeddings"]
            )
            for pid, doc, meta, vector in zip(
                result["ids"], result["documents"], result["metadatas"], result["embeddings"], strict=True
            ):
                meta = meta or {}
                text = embedding_text(str(meta.get("title", "")), str(meta.get("section", "")), doc or "")
                rows[pid] = (text, vector)
        return rows

    def read_all(self, include: list[str]) -> dict[str, list[Any]]:
        """Every stored row's id and ``include`` fields, read a page of :data:`READ_PAGE` at a time."""
        collection = self.chroma()
        rows: dict[str, list[Any]] = {"ids": [], **{field: [] for field in include}}
        for offset in range(0, collection.count(), READ_PAGE):
            page = collection.get(include=include, limit=READ_PAGE, offset=offset)
            for field in rows:
                rows[field].extend(page[field])
        return rows

    def all_ids(self) -> list[str]:
        """Every passage id stored in chromadb."""
        return self.read_all([])["ids"]

    def titles(self) -> list[tuple[str, str, int]]:
        """Every stored passage as ``(id, title, position in its document)``."""
        result = self.read_all(["metadatas"])
        return [
            (pid, str((meta or {}).get("title", "")), int((meta or {}).get("position", 0) or 0))
            for pid, meta in zip(result["ids"], result["metadatas"], strict=True)
        ]

    def get(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Passages by id: ``{id: {"text", "title", "section", "source", "url", "position", ...}}``."""
        ids = list(dict.fromkeys(ids))  # chromadb rejects repeated ids
        if not ids:
            return {}
        result = self.chroma().get(ids=ids, include=["documents", "metadatas"])
        return {
            pid: {"id": pid, "text": doc or "", **(meta or {})}
            for pid, doc, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True)
        }

    def query(self, vector: Sequence[float], n: int) -> list[tuple[str, float]]:
        """Nearest passages to ``vector``: ``(id, cosine similarity)`` pairs, best first."""
        count = self.chroma().count()
        if count == 0 or n <= 0:
            return []
        result = self.chroma().query(
            query_embeddings=[list(vector)], n_results=min(n, count), include=["distances"]
        )
        return [
            (pid, 1.0 - float(d)) for pid, d in zip(result["ids"][0], result["distances"][0], strict=True)
        ]

    # -- BM25 (the tokens in bm25.json: search_files.py) ----------------------------------------
    def tokens_from_chroma(self) -> tuple[list[str], list[list[str]]]:
        """Re-tokenise every stored passage from chromadb (when ``bm25.json`` is missing or stale)."""
        result = self.read_all(["documents", "metadatas"])
        tokens = [
            tokenize(
                embedding_text(
                    str((meta or {}).get("title", "")), str((meta or {}).get("section", "")), doc or ""
                )
            )
            for doc, meta in zip(result["documents"], result["metadatas"], strict=True)
        ]
        return list(result["ids"]), tokens

    def bm25(self) -> BM25Index:
        """A BM25 index of the current generation (from ``bm25.json``, or rebuilt from chromadb)."""
        generation = int(self.state().get("generation", 0))
        loaded = load_bm25_tokens(self.dir)
        if loaded and loaded[0] == generation:
            _, ids, tokens = loaded
        else:
            log.info("bm25.json of %r is missing or stale; rebuilding it from chromadb", self.name)
            ids, tokens = self.tokens_from_chroma()
        return BM25Index(ids, tokens)

    # -- exact dense search (the matrix in vectors.npy: search_files.py) -------------------------
    def vectors_from_chroma(self) -> tuple[list[str], Any]:
        """Every stored id and its embedding, read back from chromadb."""
        import numpy as np

        result = self.read_all(["embeddings"])
        matrix = np.asarray(result["embeddings"], dtype=np.float32).reshape(len(result["ids"]), DIMENSIONS)
        return list(result["ids"]), matrix

    def dense(self) -> DenseIndex | None:
        """An exact dense index of the current generation, or ``None`` above :data:`EXACT_LIMIT`."""
        state = self.state()
        if int(state.get("passages", 0)) > EXACT_LIMIT:
            return None
        loaded = load_vectors(self.dir)
        if loaded and loaded[0] == int(state.get("generation", 0)):
            return DenseIndex(loaded[1], loaded[2])
        log.info("vectors of %r are missing or stale; reading them from chromadb", self.name)
        return DenseIndex(*self.vectors_from_chroma())

    def size_bytes(self) -> int:
        """Bytes on disk of this collection's own files (chromadb's shared files excluded)."""
        return sum(p.stat().st_size for p in self.dir.rglob("*") if p.is_file())


class IndexStore:
    """An index directory holding any number of named collections."""

    def __init__(self, root: str | Path | None = None) -> None:
        """Use ``root`` (default: ``$AISEARCH_INDEX_DIR`` or ``~/.local/share/aisearch/index``)."""
        self.root = Path(root).expanduser() if root else default_index_dir()
        self._client: Any = None
        self._lock = threading.Lock()
        self.epoch = 0
        self.local_generations: dict[str, int] = {}

    def client(self) -> Any:
        """The chromadb client of this index: the ``PersistentClient`` of this directory, or the
        chroma server's ``HttpClient`` when ``$AISEARCH_CHROMA_URL`` names one (telemetry off)."""
        with self._lock:
            if self._client is None:
                self._client = open_client(self.root)
            return self._client

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Mark a write in progress in this process (while it lasts, :meth:`reopen` does nothing)."""
        key = str(self.root.resolve())
        with _WRITERS_LOCK:
            _WRITERS[key] = _WRITERS.get(key, 0) + 1
        try:
            yield
        finally:
            with _WRITERS_LOCK:
                _WRITERS[key] -= 1

    def reopen(self) -> bool:
        """Drop cached chromadb handles so that writes by another process become visible.

        chromadb shares one in-memory system per directory within a process, so this is skipped
        (returns False) while this process is writing to the same directory.
        """
        with _WRITERS_LOCK:
            if _WRITERS.get(str(self.root.resolve()), 0):
                return False
        with self._lock:
            if self._client is not None:
                from chromadb.api.shared_system_client import SharedSystemClient

                SharedSystemClient.clear_system_cache()
                self._client = None
                self.epoch += 1
            return True

    def names(self) -> list[str]:
        """Names of the collections in this directory."""
        base = self.root / "collections"
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if (p / "state.json").exists())

    def collection(self, name: str) -> CollectionStore:
        """A handle on collection ``name`` (which may not exist yet)."""
        return CollectionStore(self, name)

    def require(self, name: str) -> CollectionStore:
        """An existing, non-empty collection.

        Raises:
            UnknownCollectionError: When there is no such collection (the message lists the known ones).
            EmptyIndexError: When it exists but holds no passages.
        """
        collection = self.collection(name)
        if not collection.exists():
            known = ", ".join(self.names()) or "none yet"
            raise UnknownCollectionError(
                f"unknown collection {name!r}; known collections: {known}. "
                f"Create it with `aisearch index PATH --collection {name}`."
            )
        if int(collection.state().get("passages", 0)) == 0:
            raise EmptyIndexError(
                f"the collection {name!r} is empty: run `aisearch index PATH --collection {name}` "
                "to add documents (Markdown, text, HTML or JSONL)"
            )
        return collection

    def drop(self, name: str) -> None:
        """Delete a collection: its chromadb vectors and its files."""
        collection = self.collection(name)
        try:
            self.client().delete_collection(collection.name)
        except Exception:  # noqa: BLE001 - chromadb raises various errors for a missing collection
            log.debug("no chromadb collection %r to delete", name)
        shutil.rmtree(collection.dir, ignore_errors=True)
