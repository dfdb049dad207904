"""The tool index of a catalogue: chromadb (persistent) plus the exact-search and BM25 caches of
the document index's store (``tools/index/store.py``), rebuilt only when the records change.

The records' fingerprint (every record id and the embedder) sits in the collection's state: when
it matches, the index is read back from its caches and nothing is embedded. When it differs, only
the records whose vectors are not stored yet are embedded; records that left the catalogue leave
chromadb.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tools.catalog.entries import IndexEntry, catalog_entries, fingerprint
from tools.catalog.model import Catalog
from tools.catalog.paths import index_dir
from tools.catalog.tokens import tokenize
from tools.index.bm25 import BM25Index
from tools.index.dense import DenseIndex
from tools.index.embedder import MODEL_NAME, TextEmbedder, bulk_threads, shared_embedder
from tools.index.jsonfiles import read_json, write_json
from tools.index.search_files import load_bm25_tokens, load_vectors, save_bm25, save_vectors
from tools.index.store import CollectionStore, IndexStore

log = logging.getLogger(__name__)
DEFAULT_COLLECTION = "catalog"


@dataclass
class ToolIndex:
    """The loaded index: its records, their vectors and BM25 statistics, and the query embedder."""

    entries: list[IndexEntry]
    dense: DenseIndex
    bm25: BM25Index
    embedder: TextEmbedder
    fingerprint: str
    embedded: int = 0

    def __post_init__(self) -> None:
        self.by_id = {entry.id: entry for entry in self.entries}


def _entries_path(collection: CollectionStore) -> Any:
    return collection.dir / "entries.json"


def _cached(collection: CollectionStore, fp: str, embedder: TextEmbedder) -> ToolIndex | None:
    """The index from its caches when they hold this fingerprint's generation."""
    state = collection.state()
    if state.get("fingerprint") != fp:
        return None
    generation = int(state.get("generation", 0))
    vectors = load_vectors(collection.dir)
    tokens = load_bm25_tokens(collection.dir)
    raw = read_json(_entries_path(collection), None)
    if not vectors or not tokens or not raw or {vectors[0], tokens[0], raw["generation"]} != {generation}:
        return None
    entries = [IndexEntry(**item) for item in raw["entries"]]
    return ToolIndex(
        entries, DenseIndex(vectors[1], vectors[2]), BM25Index(tokens[1], tokens[2]), embedder, fp
    )


def _stored_vectors(collection: CollectionStore, ids: Sequence[str]) -> dict[str, Any]:
    """Vectors already stored for ``ids``: from the exact-search cache, else from chromadb."""
    known: dict[str, Any] = {}
    loaded = load_vectors(collection.dir)
    if loaded:
        known = {pid: row for pid, row in zip(loaded[1], loaded[2], strict=True)}
    missing = [pid for pid in ids if pid not in known]
    if missing and collection.exists():
        result = collection.chroma().get(ids=missing, include=["embeddings"])
        known.update(zip(result["ids"], result["embeddings"], strict=True))
    return {pid: known[pid] for pid in ids if pid in known}


def _build(
    collection: CollectionStore,
    entries: list[IndexEntry],
    fp: str,
    embedder: TextEmbedder,
    on_progress: Callable[[int, int], None] | None,
) -> ToolIndex:
    import numpy as np

    ids = [entry.id for entry in entries]
    stored = _stored_vectors(collection, ids)
    todo = [entry for entry in entries if entry.id not in stored]
    done = 0

    def progress(count: int) -> None:
        nonlocal done
        done += count
        if on_progress:
            on_progress(done, len(todo))

    log.info("tool index %r: embedding %d of %d records", collection.name, len(todo), len(entries))
    vectors = embedder.encode([e.text for e in todo], threads=bulk_threads(), on_batch=progress)
    if todo:
        collection.add(todo, vectors)
    stored.update(zip((e.id for e in todo), vectors, strict=True))
    stale = sorted(set(collection.all_ids()) - set(ids))
    collection.delete(stale)
    matrix = np.asarray([stored[pid] for pid in ids], dtype=np.float32).reshape(len(ids), -1)
    tokens = [tokenize(entry.text) for entry in entries]
    generation = int(collection.state().get("generation", 0)) + 1
    save_vectors(collection.dir, ids, matrix, generation)
    save_bm25(collection.dir, ids, tokens, generation)
    write_json(
        _entries_path(collection), {"generation": generation, "entries": [e.as_dict() for e in entries]}
    )
    servers = {entry.server for entry in entries}
    collection.write_state(
        generation=generation,
        passages=len(entries),
        fingerprint=fp,
        servers=len(servers),
        embedded=len(todo),
        embedder=str(getattr(embedder, "name", MODEL_NAME)),
    )
    return ToolIndex(entries, DenseIndex(ids, matrix), BM25Index(ids, tokens), embedder, fp, len(todo))


def open_tool_index(
    catalog: Catalog,
    *,
    store: IndexStore | None = None,
    collection: str = DEFAULT_COLLECTION,
    embedder: TextEmbedder | None = None,
    synthetic: Mapping[str, Sequence[str]] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ToolIndex:
    """The index of ``catalog`` (with ``synthetic`` queries per server id), built or reused.

    Args:
        catalog: The servers and tools to index.
        store: Where the index lives (default: ``~/.local/share/aisearch/tools/index``).
        collection: The collection's name (one per catalogue).
        embedder: The text embedder (default: the process-wide MiniLM).
        synthetic: Server id -> its cached synthetic queries (``tools/catalog/augment.py``).
        on_progress: Called with ``(done, total)`` texts while embedding.
    """
    store = store or IndexStore(index_dir())
    embedder = embedder or shared_embedder()
    entries = catalog_entries(catalog, synthetic)
    fp = fingerprint(entries, str(getattr(embedder, "name", MODEL_NAME)))
    target = store.collection(collection)
    cached = _cached(target, fp, embedder)
    if cached:
        return cached
    with target.write_lock(), store.writing():
        return _cached(target, fp, embedder) or _build(target, entries, fp, embedder, on_progress)
