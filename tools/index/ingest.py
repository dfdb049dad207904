"""Incremental indexing: sources → passages → embeddings → chromadb + BM25, with a manifest.

Unchanged sources (same digest) do no work. Changed sources are re-chunked, and only passages
with new ids are embedded. Sources that disappeared leave the index. A passage whose title and
text repeat a passage already stored for another source is not stored twice. A new passage that
repeats a passage leaving the index in the same run (a moved or copied-then-removed file) takes
over its stored embedding instead of being embedded again.

Kept in one file (over 300 lines): an incremental build is one transaction (manifest, embeddings,
chromadb, BM25) under one collection lock.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from tools.index.bm25 import tokenize
from tools.index.chunking import chunk_documents
from tools.index.dense import EXACT_LIMIT
from tools.index.documents import Passage
from tools.index.embedder import DIMENSIONS, TextEmbedder, bulk_threads, shared_embedder
from tools.index.manifest import Manifest, SourceEntry
from tools.index.search_files import load_bm25_tokens, load_vectors, save_bm25, save_vectors
from tools.index.sources import Source, file_source, file_sources, under_roots
from tools.index.store import CollectionStore, IndexStore

if TYPE_CHECKING:
    from tqdm import tqdm

log = logging.getLogger(__name__)

EMBED_CHUNK = 256
Progress = Callable[[int, int], None]


@dataclass
class IngestReport:
    """What one indexing run did."""

    collection: str
    sources: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: list[str] = field(default_factory=list)
    passages_added: int = 0
    passages_removed: int = 0
    passages_reused: int = 0
    embeddings_reused: int = 0
    duplicates_skipped: int = 0
    passages_total: int = 0
    embedded: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    generation: int = 0

    def as_dict(self) -> dict[str, object]:
        """The report as a JSON-ready dict."""
        return asdict(self)

    def summary(self) -> str:
        """One line for humans."""
        failed = f", {len(self.failed)} failed" if self.failed else ""
        return (
            f"{self.collection}: {self.sources} files ({self.changed} changed, {self.unchanged} unchanged, "
            f"{self.removed} removed{failed}); {self.passages_total} passages "
            f"(+{self.passages_added} -{self.passages_removed}, {self.duplicates_skipped} duplicates skipped, "
            f"{self.embeddings_reused} embeddings reused); "
            f"{self.seconds:.1f} s"
        )


def _bar(total: int, desc: str, show: bool, unit: str) -> tqdm[NoReturn]:
    from tqdm import tqdm

    return tqdm(
        total=total, desc=desc, unit=unit, file=sys.stderr, disable=not show or total == 0, mininterval=0.5
    )


def index_sources(
    collection: CollectionStore,
    sources: Sequence[Source],
    *,
    in_scope: Callable[[str], bool],
    embedder: TextEmbedder | None = None,
    show_progress: bool = False,
    on_progress: Progress | None = None,
) -> IngestReport:
    """Bring ``collection`` in line with ``sources``.

    Args:
        collection: The collection to update (created if missing).
        sources: The sources of this run.
        in_scope: Whether a manifest key that is not among ``sources`` should leave the index.
        embedder: The embedder (default: the shared all-MiniLM-L6-v2).
        show_progress: Draw tqdm bars on stderr.
        on_progress: Called with ``(passages embedded, passages to embed)`` as embedding proceeds.
    """
    started = time.perf_counter()
    report = IngestReport(collection=collection.name, sources=len(sources))
    with collection.write_lock(), collection.index.writing():
        state = collection.state()
        recovering = state.get("status") == "building"
        manifest = collection.manifest()
        old_hashes = {
            pid: h for entry in manifest.sources.values() for pid, h, kept in entry.passages if kept
        }
        current = {source.key: source for source in sources}
        removed = [key for key in manifest.sources if key not in current and in_scope(key)]
        changed = [
            s for s in sources if s.key not in manifest.sources or manifest.sources[s.key].digest != s.digest
        ]
        report.unchanged = len(sources) - len(changed)
        report.generation = int(state.get("generation", 0))
        if not removed and not changed and not recovering and collection.exists():
            report.passages_total = manifest.stored_count()
            report.seconds = time.perf_counter() - started
            return report

        collection.write_state(
            status="building", generation=report.generation, passages=manifest.stored_count()
        )
        to_delete, freed = _drop_sources(manifest, removed)
        report.removed = len(removed)
        changed += _orphaned_duplicates(manifest, freed, {s.key for s in changed}, current)
        to_add = _rechunk(manifest, changed, to_delete, report, show_progress)
        report.changed = len(changed)

        reusable = _vectors_to_reuse(collection, to_add, to_delete, old_hashes)
        collection.delete(sorted(to_delete))
        present = collection.existing([p.id for p in to_add]) if to_add else set()
        to_embed = [p for p in to_add if p.id not in present]
        report.passages_reused = len(to_add) - len(to_embed)
        new_vectors = _store_reused(collection, [p for p in to_embed if p.id in reusable], reusable, report)
        new_vectors |= _embed_and_store(
            collection,
            [p for p in to_embed if p.id not in reusable],
            embedder or shared_embedder(),
            report,
            show_progress,
            on_progress,
        )
        stored = {pid for entry in manifest.sources.values() for pid in entry.stored_ids()}
        if recovering:
            orphans = set(collection.all_ids()) - stored
            if orphans:
                log.info("removing %d passages left by an interrupted run", len(orphans))
                collection.delete(sorted(orphans))

        generation = report.generation + 1
        _update_bm25(collection, to_add, to_delete, stored, generation, rebuild=recovering)
        _update_vectors(collection, new_vectors, to_delete, stored, generation, rebuild=recovering)
        manifest.save(collection.manifest_path)
        report.passages_added = len(to_add)
        report.passages_removed = len(to_delete - {p.id for p in to_add})
        report.passages_total = len(stored)
        report.generation = generation
        report.seconds = time.perf_counter() - started
        collection.write_state(
            status="ready",
            generation=generation,
            passages=len(stored),
            sources=len(manifest.sources),
            last_build=report.as_dict(),
        )
    return report


def _drop_sources(manifest: Manifest, removed: Iterable[str]) -> tuple[set[str], set[str]]:
    """Remove sources from the manifest; return their stored ids and the content hashes freed."""
    to_delete: set[str] = set()
    freed: set[str] = set()
    for key in removed:
        entry = manifest.sources.pop(key)
        to_delete.update(entry.stored_ids())
        freed.update(h for _, h, stored in entry.passages if stored)
    return to_delete, freed


def _orphaned_duplicates(
    manifest: Manifest, freed: set[str], changed_keys: set[str], current: dict[str, Source]
) -> list[Source]:
    """Sources that skipped a duplicate whose stored copy was just removed: index them again."""
    if not freed:
        return []
    again = []
    for key, entry in manifest.sources.items():
        if key in changed_keys or not any(h in freed and not stored for _, h, stored in entry.passages):
            continue
        if key in current:
            again.append(current[key])
        elif os.path.isfile(key):
            again.append(file_source(Path(key)))
        else:
            log.warning("cannot re-read %s to restore passages it shared with a removed source", key)
            continue
        entry.digest = ""  # force the re-chunk even if the digest is unchanged
    return again


def _rechunk(
    manifest: Manifest, changed: Sequence[Source], to_delete: set[str], report: IngestReport, show: bool
) -> list[Passage]:
    """Load and chunk changed sources; update the manifest; return the passages to store."""
    changed_keys = {s.key for s in changed}
    owner = {h: key for h, key in manifest.owner_of_hash().items() if key not in changed_keys}
    to_add: list[Passage] = []
    with _bar(len(changed), "reading", show and len(changed) > 1, "file") as bar:
        for source in changed:
            old = manifest.sources.get(source.key)
            try:
                passages = chunk_documents(source.load())
            except (OSError, UnicodeError, ValueError) as exc:
                log.warning("skipped %s: %s", source.key, exc)
                report.failed.append(f"{source.key}: {exc}")
                bar.update(1)
                continue
            old_stored = set(old.stored_ids()) if old else set()
            entries: list[tuple[str, str, bool]] = []
            new_stored: set[str] = set()
            for passage in passages:
                holder = owner.get(passage.content_hash)
                if holder is not None and holder != source.key:
                    entries.append((passage.id, passage.content_hash, False))
                    report.duplicates_skipped += 1
                    continue
                owner[passage.content_hash] = source.key
                entries.append((passage.id, passage.content_hash, True))
                new_stored.add(passage.id)
                if passage.id not in old_stored:
                    to_add.append(passage)
            to_delete.update(old_stored - new_stored)
            manifest.sources[source.key] = SourceEntry(source.digest, entries)
            bar.update(1)
    return to_add


def _vectors_to_reuse(
    collection: CollectionStore, passages: Sequence[Passage], to_delete: set[str], old_hashes: dict[str, str]
) -> dict[str, Any]:
    """Embeddings of passages about to leave the index that a new passage repeats exactly (same
    title, section and text): new passage id -> vector. Read before the old passages are deleted."""
    import numpy as np

    wanted = {p.content_hash for p in passages}
    old_by_hash = {old_hashes[pid]: pid for pid in to_delete if old_hashes.get(pid) in wanted}
    if not old_by_hash:
        return {}
    rows = collection.stored_rows(list(old_by_hash.values()))
    reusable: dict[str, Any] = {}
    for passage in passages:
        row = rows.get(old_by_hash.get(passage.content_hash, ""))
        if row is not None and row[0] == passage.embedding_text():
            reusable[passage.id] = np.asarray(row[1], dtype=np.float32)
    return reusable


def _store_reused(
    collection: CollectionStore, passages: Sequence[Passage], vectors: dict[str, Any], report: IngestReport
) -> dict[str, Any]:
    """Store passages under their new ids and sources with embeddings taken over from old ones."""
    import numpy as np

    if not passages:
        return {}
    collection.add(passages, np.stack([vectors[p.id] for p in passages]))
    report.embeddings_reused = len(passages)
    return {p.id: vectors[p.id] for p in passages}


def _embed_and_store(
    collection: CollectionStore,
    passages: Sequence[Passage],
    embedder: TextEmbedder,
    report: IngestReport,
    show: bool,
    on_progress: Progress | None,
) -> dict[str, Any]:
    """Embed passages in chunks and upsert each chunk, so an interrupted run keeps its work.

    Returns the new vectors by passage id.
    """
    vectors_by_id: dict[str, Any] = {}
    if not passages:
        return vectors_by_id
    started = time.perf_counter()
    threads = bulk_threads()
    passages = sorted(passages, key=lambda p: len(p.embedding_text()))  # less padding per batch
    done = 0
    if on_progress:
        on_progress(0, len(passages))
    with _bar(len(passages), "embedding", show, "passage") as bar:
        for start in range(0, len(passages), EMBED_CHUNK):
            chunk = passages[start : start + EMBED_CHUNK]
            vectors = embedder.encode(
                [p.embedding_text() for p in chunk], threads=threads, on_batch=bar.update
            )
            collection.add(chunk, vectors)
            vectors_by_id.update(zip((p.id for p in chunk), vectors, strict=True))
            done += len(chunk)
            if on_progress:
                on_progress(done, len(passages))
    report.embedded = len(passages)
    report.embed_seconds = time.perf_counter() - started
    return vectors_by_id


def _update_bm25(
    collection: CollectionStore,
    added: Sequence[Passage],
    deleted: set[str],
    stored: set[str],
    generation: int,
    *,
    rebuild: bool,
) -> None:
    """Update ``bm25.json``: drop deleted ids, append added ones (or rebuild from chromadb)."""
    loaded = None if rebuild else load_bm25_tokens(collection.dir)
    if {p.id for p in added} == stored:  # a first build: every stored passage is at hand
        ids, tokens = [p.id for p in added], [tokenize(p.embedding_text()) for p in added]
    elif loaded is None or loaded[0] != generation - 1:
        ids, tokens = collection.tokens_from_chroma()
    else:
        _, old_ids, old_tokens = loaded
        added_ids = {p.id for p in added}
        keep = [
            (i, t)
            for i, t in zip(old_ids, old_tokens, strict=True)
            if i not in deleted and i not in added_ids
        ]
        ids = [i for i, _ in keep] + [p.id for p in added]
        tokens = [t for _, t in keep] + [tokenize(p.embedding_text()) for p in added]
    if set(ids) != stored:  # never persist an index that disagrees with the manifest
        ids, tokens = collection.tokens_from_chroma()
    save_bm25(collection.dir, ids, tokens, generation)


def _update_vectors(
    collection: CollectionStore,
    added: dict[str, Any],
    deleted: set[str],
    stored: set[str],
    generation: int,
    *,
    rebuild: bool,
) -> None:
    """Update the exact-search matrix: drop deleted rows, append new ones (or re-read chromadb)."""
    import numpy as np

    if len(stored) > EXACT_LIMIT:
        return
    if added and set(added) == stored:  # a first build: every stored vector is at hand
        save_vectors(collection.dir, list(added), np.stack(list(added.values())), generation)
        return
    loaded = None if rebuild else load_vectors(collection.dir)
    if loaded is not None and loaded[0] == generation - 1:
        _, old_ids, old_matrix = loaded
        keep = [i for i, pid in enumerate(old_ids) if pid not in deleted and pid not in added]
        ids = [old_ids[i] for i in keep] + list(added)
        rows = [old_matrix[keep]] + ([np.stack(list(added.values()))] if added else [])
        matrix = np.concatenate(rows) if rows else np.zeros((0, DIMENSIONS), dtype=np.float32)
        if set(ids) == stored:
            save_vectors(collection.dir, ids, matrix, generation)
            return
    save_vectors(collection.dir, *collection.vectors_from_chroma(), generation)


def index_paths(
    paths: Iterable[str | Path],
    collection: str = "docs",
    *,
    store: IndexStore | None = None,
    embedder: TextEmbedder | None = None,
    show_progress: bool = False,
) -> IngestReport:
    """Index files and folders (Markdown, text/reST, HTML, JSONL) into a collection.

    Files that vanished from under ``paths`` (or from disk) leave the collection; files indexed
    earlier from other folders stay.

    Raises:
        FileNotFoundError: When a path does not exist.
    """
    sources, roots = file_sources(paths)
    target = (store or IndexStore()).collection(collection)
    return index_sources(
        target, sources, in_scope=under_roots(roots), embedder=embedder, show_progress=show_progress
    )
