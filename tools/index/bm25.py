"""BM25 over passages: ``rank-bm25``'s Okapi statistics (k1=1.5, b=0.75, idf floor) scored through
an inverted index, and a plain word tokeniser.

``BM25Okapi.get_scores`` walks every document for every query term in Python (about 36 ms per
query on 10.8k paragraphs); scoring only the postings of the query terms gives the same scores in
about 0.3 ms, for about 0.2 s more at load time.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

_TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (``\\w+``), no stemming and no stop words (the measured baseline)."""
    return _TOKEN.findall(text.lower())


class BM25Index:
    """A BM25 ranker over tokenised passages, addressed by passage id."""

    def __init__(self, ids: Sequence[str], tokens: Sequence[list[str]]) -> None:
        """Build the statistics and the postings (about 0.4 s for 10.8k paragraphs)."""
        import numpy as np
        from rank_bm25 import BM25Okapi

        self.ids = list(ids)
        self._postings: dict[str, tuple[Any, Any]] = {}
        if not self.ids:
            return
        okapi = BM25Okapi(list(tokens))
        self.k1, self.idf = okapi.k1, okapi.idf
        self._norm = okapi.k1 * (
            1 - okapi.b + okapi.b * np.asarray(okapi.doc_len, dtype=np.float64) / okapi.avgdl
        )
        docs: dict[str, list[int]] = defaultdict(list)
        freqs: dict[str, list[int]] = defaultdict(list)
        for index, counts in enumerate(okapi.doc_freqs):
            for term, count in counts.items():
                docs[term].append(index)
                freqs[term].append(count)
        self._postings = {
            term: (np.fromiter(docs[term], np.int64), np.fromiter(freqs[term], np.float64)) for term in docs
        }

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query: str) -> Any:
        """BM25 scores of every passage for ``query`` (equal to ``BM25Okapi.get_scores``)."""
        import numpy as np

        scores = np.zeros(len(self.ids))
        for term in tokenize(query):
            posting = self._postings.get(term)
            if posting is not None:
                rows, tf = posting
                scores[rows] += self.idf[term] * tf * (self.k1 + 1) / (tf + self._norm[rows])
        return scores

    def top(self, query: str, n: int) -> list[tuple[str, float]]:
        """The ``n`` best ``(id, score)`` pairs for ``query``; passages with score 0 are left out."""
        import numpy as np

        if not self._postings or n <= 0:
            return []
        scores = self.scores(query)
        n = min(n, len(scores))
        best = np.argpartition(-scores, n - 1)[:n]
        best = best[np.lexsort((best, -scores[best]))]
        return [(self.ids[i], float(scores[i])) for i in best if scores[i] > 0]
