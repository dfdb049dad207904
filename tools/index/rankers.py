"""Rank fusion: reciprocal rank fusion (RRF) of several ranked lists."""

from __future__ import annotations

from collections.abc import Sequence

RRF_K = 60
RANKERS = ("bm25", "dense", "hybrid")


def reciprocal_rank_fusion(lists: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse ranked id lists: ``score(d) = Σ 1 / (k + rank)``, rank counted from 1.

    Ties keep the order in which ids first appear (earlier lists first), so fusion is deterministic.
    """
    scores: dict[str, float] = {}
    for ranked in lists:
        for rank, pid in enumerate(ranked, start=1):
            scores[pid] = scores.get(pid, 0.0) + 1.0 / (k + rank)
    order = {pid: i for i, pid in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))
