"""Search one collection: BM25, dense (chromadb cosine), hybrid (RRF), optional LLM rerank."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tools.index.bm25 import BM25Index
from tools.index.dense import DenseIndex
from tools.index.embedder import Embedder, shared_embedder
from tools.index.links import TitleLinks, linked_documents
from tools.index.rankers import RANKERS, RRF_K, reciprocal_rank_fusion
from tools.index.rerank import ListwiseReranker
from tools.index.store import CollectionStore

log = logging.getLogger(__name__)

POOL = 100  # candidates taken from each ranker before fusion


@dataclass
class Hit:
    """One ranked passage id, its score under the ranker that produced it, and (when the dense
    ranker saw it) the cosine similarity of its embedding to the query's."""

    id: str
    score: float
    similarity: float | None = None


class Searcher:
    """Ranks the passages of one collection; reloads BM25 when the collection changes."""

    def __init__(
        self,
        collection: CollectionStore,
        embedder: Embedder | None = None,
        reranker: ListwiseReranker | None = None,
        pool: int = POOL,
    ) -> None:
        """Wrap ``collection``; the embedder and BM25 load on first use."""
        self.collection = collection
        self.embedder = embedder or shared_embedder()
        self.reranker = reranker
        self.pool = pool
        self._bm25: BM25Index | None = None
        self._dense: DenseIndex | None = None
        self._links: TitleLinks | None = None
        self._generation: int | None = None
        self._lock = threading.Lock()

    def generation(self) -> int:
        """The collection's current generation (bumped by every indexing run that changes it)."""
        return int(self.collection.state().get("generation", 0))

    def refresh(self) -> bool:
        """Reload BM25 and chromadb handles if another run changed the collection; True if reloaded."""
        with self._lock:
            generation = self.generation()
            if self._bm25 is not None and generation == self._generation:
                return False
            index = self.collection.index
            written_here = index.local_generations.get(self.collection.name) == generation
            if self._generation is not None and generation != self._generation and not written_here:
                if not index.reopen():  # another process changed the collection: chromadb must re-read it
                    return False  # busy writing here: keep the current view and retry on the next search
            self._bm25 = self.collection.bm25()
            self._dense = self.collection.dense()
            self._links = None  # rebuilt from the new generation's titles on first use
            self._generation = generation
            return True

    def bm25(self, query: str, n: int) -> list[Hit]:
        """Top ``n`` by BM25."""
        self.refresh()
        assert self._bm25 is not None
        return [Hit(pid, score) for pid, score in self._bm25.top(query, n)]

    def dense(self, query: str, n: int) -> list[Hit]:
        """Top ``n`` by cosine similarity of MiniLM embeddings (exact; chromadb HNSW for huge collections)."""
        self.refresh()
        vector = self.embedder.encode_query(query)
        if self._dense is not None:
            return [Hit(pid, score) for pid, score in self._dense.top(vector, n)]
        return [Hit(pid, score) for pid, score in self.collection.query(vector.tolist(), n)]

    def hybrid(self, query: str, n: int) -> list[Hit]:
        """Top ``n`` by reciprocal rank fusion of the BM25 and dense top ``pool``."""
        dense = {h.id: h.score for h in self.dense(query, self.pool)}
        lists = [[h.id for h in self.bm25(query, self.pool)], list(dense)]
        return [Hit(pid, score, dense.get(pid)) for pid, score in reciprocal_rank_fusion(lists, RRF_K)[:n]]

    def fused(self, queries: Sequence[str], n: int) -> list[Hit]:
        """Hybrid over several queries (a question and its sub-queries), fused again with RRF."""
        lists = [[h.id for h in self.hybrid(q, self.pool)] for q in queries if q.strip()]
        return [Hit(pid, score) for pid, score in reciprocal_rank_fusion(lists, RRF_K)[:n]]

    def links(self) -> TitleLinks:
        """The collection's titles, to find which documents a text names (built on first use)."""
        self.refresh()
        with self._lock:
            if self._links is None:
                self._links = TitleLinks(self.collection.titles())
            return self._links

    def linked(self, query: str, passage_ids: Sequence[str], n: int) -> list[Hit]:
        """The lead passages of the documents that ``query`` and the given passages name.

        The next hop of a bridge question, found by following what the first hop's passages
        mention instead of asking a model (see ``tools.index.links``). The given passages and their
        own documents are left out; what the query's own ranking also finds comes first, in its
        order, then the rest in order of mention.
        """
        passages = self.fetch(passage_ids)
        texts = [query, *(passages[pid]["text"] for pid in passage_ids if pid in passages)]
        documents = linked_documents(
            self.links(), texts, [passages[pid].get("title", "") for pid in passages]
        )
        candidates = [d.lead_id for d in documents if d.lead_id not in passages]
        if not candidates:
            return []
        rank = {hit.id: i for i, hit in enumerate(self.hybrid(query, self.pool))}
        ordered = sorted(candidates, key=lambda pid: rank.get(pid, len(rank)))
        return [Hit(pid, 1.0 / (1 + i)) for i, pid in enumerate(ordered[:n])]

    def rank(self, query: str, n: int, ranker: str = "hybrid", rerank: bool = False) -> list[Hit]:
        """Top ``n`` under ``ranker`` (``bm25``, ``dense`` or ``hybrid``), optionally LLM-reranked.

        Raises:
            ValueError: For an unknown ranker, or ``rerank`` without a configured reranker.
        """
        if ranker not in RANKERS:
            raise ValueError(f"unknown ranker {ranker!r}; use one of {', '.join(RANKERS)}")
        method: Callable[[str, int], list[Hit]] = getattr(self, ranker)
        if not rerank:
            return method(query, n)
        if self.reranker is None:
            raise ValueError("reranking was requested but no rerank model is configured")
        candidates = method(query, max(n, self.reranker.depth))
        texts = {pid: p["text"] for pid, p in self.fetch([h.id for h in candidates]).items()}
        order = self.reranker.rerank(query, [h.id for h in candidates], texts)
        count = len(order)
        return [Hit(pid, float(count - i)) for i, pid in enumerate(order[:n])]

    def fetch(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored passages by id (text and metadata)."""
        self.refresh()
        return self.collection.get(ids)
