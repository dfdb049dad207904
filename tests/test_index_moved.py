"""A moved or copied corpus keeps its embeddings: nothing is embedded again (real model, chromadb)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tools.index.embedder import shared_embedder
from tools.index.ingest import index_paths
from tools.index.search import Searcher
from tools.index.store import IndexStore

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "docs"
QUESTION = "Who built the Harrow Point lighthouse?"


class CountingEmbedder:
    """The shared all-MiniLM-L6-v2 embedder, counting the passages it embeds."""

    def __init__(self) -> None:
        self.inner = shared_embedder()
        self.embedded = 0

    def encode(self, texts, *, threads=None, on_batch=None):  # noqa: ANN001, ANN201 - delegating wrapper
        self.embedded += len(texts)
        return self.inner.encode(texts, threads=threads, on_batch=on_batch)

    def encode_query(self, text: str):  # noqa: ANN201 - delegating wrapper
        return self.inner.encode_query(text)


@pytest.fixture(scope="module")
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


def _file_sources(store: IndexStore) -> set[str]:
    """The sources of stored passages that are files (JSONL records name their URL instead)."""
    rows = store.collection("docs").chroma().get(include=["metadatas"])["metadatas"]
    return {str(meta["source"]) for meta in rows if str(meta["source"]).startswith("/")}


def _top_source(store: IndexStore) -> str:
    searcher = Searcher(store.require("docs"))
    for hits in (searcher.dense(QUESTION, 1), searcher.bm25(QUESTION, 1)):
        assert hits
    top = searcher.fetch([searcher.dense(QUESTION, 1)[0].id])
    return str(next(iter(top.values()))["source"])


@pytest.mark.slow
def test_moved_corpus_is_not_embedded_again(tmp_path: Path, embedder: CountingEmbedder) -> None:
    store = IndexStore(tmp_path / "index")
    first, moved = tmp_path / "a" / "docs", tmp_path / "b" / "docs"
    shutil.copytree(FIXTURES, first)
    built = index_paths([first], store=store, embedder=embedder)
    assert built.embedded == built.passages_total > 0
    _, vectors_before = store.collection("docs").vectors_from_chroma()

    moved.parent.mkdir()
    first.rename(moved)
    before = embedder.embedded
    report = index_paths([moved], store=store, embedder=embedder)
    assert embedder.embedded == before and report.embedded == 0
    assert report.embeddings_reused == built.passages_total == report.passages_total
    assert {s for s in _file_sources(store) if not s.startswith(str(moved))} == set()
    assert _top_source(store) == str(moved / "history" / "lighthouse.html")
    _, vectors_after = store.collection("docs").vectors_from_chroma()
    assert np.allclose((vectors_after @ vectors_before.T).max(axis=1), 1.0, atol=1e-4)  # the same vectors

    (moved / "garden" / "compost.md").write_text("# Compost heaps\n\nA compost heap needs air and water.\n")
    before = embedder.embedded
    report = index_paths([moved], store=store, embedder=embedder)
    assert report.changed == 1 and report.embedded == embedder.embedded - before == 1
    assert report.embeddings_reused == 0


@pytest.mark.slow
def test_copy_is_reused_and_takes_over_when_the_original_goes(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    store = IndexStore(tmp_path / "index")
    original, copy = tmp_path / "a" / "docs", tmp_path / "c" / "docs"
    shutil.copytree(FIXTURES, original)
    shutil.copytree(FIXTURES, copy)
    built = index_paths([original], store=store, embedder=embedder)
    before = embedder.embedded
    report = index_paths([copy], store=store, embedder=embedder)  # stored once: the copy is a duplicate
    assert embedder.embedded == before and report.duplicates_skipped == built.passages_total
    assert _top_source(store) == str(original / "history" / "lighthouse.html")

    shutil.rmtree(original)
    report = index_paths([copy], store=store, embedder=embedder)
    assert embedder.embedded == before and report.embedded == 0
    assert report.embeddings_reused == built.passages_total == report.passages_total
    assert {s for s in _file_sources(store) if not s.startswith(str(copy))} == set()
    assert _top_source(store) == str(copy / "history" / "lighthouse.html")
