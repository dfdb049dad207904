"""An embedding classifier of query routes, trained on labelled example queries (no LLM call).

Adaptive-RAG's lesson (seed 001 §2): a small classifier recovers most of what multi-step search
gains, at a fraction of its cost. The examples in ``agents/data/route_examples.jsonl`` are labelled
with what they need: ``writer_only`` (model knowledge), ``direct`` (one search), ``serial`` (a
multi-hop chain), ``parallel`` (a comparison of named things), ``planner`` (several facts combined
by computation) and ``tool`` (a non-search tool: clock, calculator, live data). A query takes the
label of its nearest examples (cosine of MiniLM embeddings, similarity-weighted vote of the top
``k``); the vote's share and the nearest similarity say how sure it is, and an unsure verdict is
left to the Master's LLM assessment.

Names are replaced by ``X`` before embedding ("Where was the director of X born?"): the route
depends on the question's form, not on its topic, and an embedding of the raw question mostly
measures the topic.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import defaultdict
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Literal

from agents.facets import delexicalize

if TYPE_CHECKING:
    import numpy as np

    from tools.index.embedder import TextEmbedder

log = logging.getLogger(__name__)

Label = Literal["writer_only", "direct", "serial", "parallel", "planner", "tool"]
EXAMPLES = "data/route_examples.jsonl"
NEIGHBOURS = 5
MIN_SHARE = 0.6  # the winning label's share of the neighbours' similarity
MIN_SIMILARITY = 0.35  # the nearest example must be at least this close


@dataclass(frozen=True)
class RouteGuess:
    """The classifier's verdict on a query."""

    label: Label
    share: float
    nearest: float

    @property
    def confident(self) -> bool:
        """Sure enough to route without the LLM."""
        return self.share >= MIN_SHARE and self.nearest >= MIN_SIMILARITY


def load_examples() -> list[tuple[str, Label]]:
    """The labelled example queries shipped with the project."""
    text = files("agents").joinpath(EXAMPLES).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [(row["query"], row["label"]) for row in rows]


class RouteClassifier:
    """k-nearest-neighbour routing over embedded example queries (embedded once, on first use)."""

    def __init__(self, embedder: TextEmbedder, examples: list[tuple[str, Label]] | None = None) -> None:
        """Classify with ``embedder`` against ``examples`` (default: the shipped ones)."""
        self.embedder = embedder
        self.examples = examples if examples is not None else load_examples()
        self._matrix: np.ndarray | None = None
        self._lock = threading.Lock()

    def _vectors(self) -> np.ndarray:
        with self._lock:
            if self._matrix is None:
                texts = [delexicalize(query) for query, _ in self.examples]
                self._matrix = self.embedder.encode(texts, threads=1)
            return self._matrix

    def classify(self, query: str) -> RouteGuess:
        """The label of ``query``'s nearest examples, with the vote's share and the nearest similarity."""
        similarities = self._vectors() @ self.embedder.encode_query(delexicalize(query))
        return self._vote(similarities)

    def leave_one_out(self) -> float:
        """The share of examples whose label the other examples give them (a held-out accuracy)."""
        matrix = self._vectors()
        right = 0
        for index, (_, label) in enumerate(self.examples):
            similarities = matrix @ matrix[index]
            similarities[index] = -1.0  # the example itself does not vote
            right += self._vote(similarities).label == label
        return right / len(self.examples) if self.examples else 0.0

    def _vote(self, similarities: np.ndarray) -> RouteGuess:
        order = similarities.argsort()[::-1][:NEIGHBOURS]
        votes: dict[Label, float] = defaultdict(float)
        for index in order:
            votes[self.examples[index][1]] += max(float(similarities[index]), 0.0)
        label, weight = max(votes.items(), key=lambda item: item[1])
        total = sum(votes.values()) or 1.0
        guess = RouteGuess(label=label, share=weight / total, nearest=float(similarities[order[0]]))
        log.debug("route classifier: %s (share %.2f, nearest %.2f)", label, guess.share, guess.nearest)
        return guess


_shared: RouteClassifier | None = None


def shared_classifier() -> RouteClassifier:
    """The process-wide classifier (the examples are embedded once).

    Its embeddings come from the long-lived document server when one runs (the CLI starts it), so
    the process never loads MiniLM itself; otherwise from the in-process model.
    """
    global _shared
    if _shared is None:
        from tools.index.remote_embedder import routing_embedder

        _shared = RouteClassifier(routing_embedder())
    return _shared
