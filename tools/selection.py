"""Candidate-tool selection (the "dynamic capability boundary" of seed 001 §3.3).

A BM25 match of the query (plus the Master's intent) against each tool's name and description.
The full tool-retrieval stack (multi-vector MaxSim over servers and tools, synthetic queries,
hybrid scoring) lands in its own module; this one keeps the same interface.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rank_bm25 import BM25Okapi

from tools.hub import ToolSpec

TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be by for from how i in is it of on or the to what when where which who why "
    "with me my you your this that do does can".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens without stop words; ``snake_case`` names are split."""
    return [tok for tok in TOKEN.findall(text.lower().replace("_", " ")) if tok not in STOPWORDS]


def select_tools(query: str, specs: Sequence[ToolSpec], k: int) -> list[tuple[ToolSpec, float]]:
    """The ``k`` best-matching tools with their scores, best first; tools that match nothing are left out."""
    if not specs:
        return []
    corpus = [tokenize(f"{spec.name} {spec.server} {spec.description}") for spec in specs]
    scores = BM25Okapi(corpus).get_scores(tokenize(query))
    ranked = sorted(zip(specs, scores, strict=True), key=lambda pair: (-pair[1], pair[0].name))
    return [(spec, float(score)) for spec, score in ranked[:k] if score > 0]
