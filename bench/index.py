"""Benchmark of an index build at scale (``aisearch bench index``): is its throughput flat?

Builds a collection from a synthetic corpus of ``n`` passages that all have the same length (so
that only the collection's growth can change the rate: the real build embeds its passages
shortest first, which by itself makes passages per second fall as a build goes on), through the
same code as ``aisearch index`` (``tools/index/ingest.py``: chunking, MiniLM embedding, chromadb
upserts, BM25 tokens, the vector matrix). Per tenth of the build it records passages per second,
and how much of that time went to embedding and how much to storing; at the end, the time of the
final BM25 and vector-matrix writes and the process's peak resident memory.
"""

from __future__ import annotations

import json
import random
import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.machine import machine_line
from tools.index.embedder import TextEmbedder, shared_embedder
from tools.index.ingest import index_sources
from tools.index.sources import file_sources, under_roots
from tools.index.store import IndexStore

VOCABULARY_SIZE = 20_000
TENTHS = 10


def synthetic_corpus(path: Path, n: int, words: int, seed: int = 7) -> None:
    """Write ``n`` passages of ``words`` random words each as a JSONL corpus (title, text)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(VOCABULARY_SIZE)]
    with path.open("w") as out:
        for i in range(n):
            text = " ".join(rng.choices(vocabulary, k=words)).capitalize() + "."
            out.write(json.dumps({"title": f"Synthetic passage {i}", "text": text}) + "\n")


class TimedEmbedder:
    """An embedder that adds up the seconds its ``encode`` calls take."""

    def __init__(self, inner: TextEmbedder) -> None:
        """Time ``inner``."""
        self.inner = inner
        self.dimensions = inner.dimensions
        self.seconds = 0.0

    def encode(
        self,
        texts: Sequence[str],
        *,
        threads: int | None = None,
        on_batch: Callable[[int], object] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` (timed)."""
        started = time.perf_counter()
        try:
            return self.inner.encode(texts, threads=threads, on_batch=on_batch)
        finally:
            self.seconds += time.perf_counter() - started

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query."""
        return self.inner.encode_query(text)


def run(n: int = 100_000, words: int = 60) -> dict[str, Any]:
    """Build a collection of ``n`` synthetic passages and report its throughput per tenth."""
    embedder = TimedEmbedder(shared_embedder())
    embedder.encode(["warm-up"])  # the model's load is not part of the build
    embedder.seconds = 0.0
    samples: list[tuple[float, int, float]] = []  # (seconds since start, passages done, embed seconds)
    with tempfile.TemporaryDirectory(prefix="aisearch-bench-index-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        synthetic_corpus(corpus, n, words)
        sources, roots = file_sources([corpus])
        collection = IndexStore(Path(tmp) / "index").collection("bench")
        started = time.perf_counter()

        def progress(done: int, total: int) -> None:
            samples.append((time.perf_counter() - started, done, embedder.seconds))

        report = index_sources(
            collection, sources, in_scope=under_roots(roots), embedder=embedder, on_progress=progress
        )
        seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_line(),
        "passages": report.passages_total,
        "words_per_passage": words,
        "seconds": round(seconds, 1),
        "embed_seconds": round(report.embed_seconds, 1),
        "after_embedding_seconds": round(seconds - (samples[-1][0] if samples else 0.0), 1),
        "peak_rss_mib": round(peak_mib),
        "tenths": tenths(samples, n),
    }


def tenths(samples: list[tuple[float, int, float]], n: int) -> list[dict[str, float]]:
    """Passages per second in each tenth of the build, split into embedding and storing time."""
    rows = []
    previous = (0.0, 0, 0.0)
    for k in range(1, TENTHS + 1):
        mark = next((s for s in samples if s[1] >= n * k / TENTHS), None)
        if mark is None or mark[1] == previous[1]:
            continue
        elapsed, done, embedded = (mark[i] - previous[i] for i in range(3))
        rows.append(
            {
                "up_to": mark[1],
                "passages_per_s": round(done / elapsed, 1),
                "embed_share": round(embedded / elapsed, 3),
                "store_ms_per_passage": round(1000 * (elapsed - embedded) / done, 3),
            }
        )
        previous = mark
    return rows


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown."""
    lines = [
        f"# Index build at scale ({report['date']})",
        "",
        f"`aisearch bench index --passages {report['passages']} --words {report['words_per_passage']}` "
        f"on {report['machine']}.",
        "",
        f"- passages: {report['passages']:,} ({report['words_per_passage']} words each, synthetic)",
        f"- build: {report['seconds']} s, of which embedding {report['embed_seconds']} s; "
        f"after the last passage was stored (BM25 tokens, vector matrix, manifest): "
        f"{report['after_embedding_seconds']} s",
        f"- peak resident memory of the process: {report['peak_rss_mib']:,} MiB",
        "",
        "| passages stored | passages/s in this tenth | share embedding | storing ms/passage |",
        "|---|---|---|---|",
    ]
    for row in report["tenths"]:
        lines.append(
            f"| {row['up_to']:,} | {row['passages_per_s']} | {row['embed_share']:.0%} | "
            f"{row['store_ms_per_passage']} |"
        )
    return "\n".join(lines) + "\n"
