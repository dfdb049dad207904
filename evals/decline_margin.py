"""How strongly an executor leans to declining: its own log-odds at the token that decides.

In the ``schema`` mode every reply opens ``{"tool_calls": [`` and the next token decides the step:
``]`` declines (an empty list), ``{`` starts a call. With the endpoint's top log-probabilities of
that position (an OpenAI-style ``logprobs`` reply; llama.cpp reports them before its grammar), the
*decline margin* is log p(declining tokens) − log p(calling tokens). Positive: the model leans to
declining.

Over a run, the margin answers two different questions about a student that declines too often or
too rarely. Does it tell BFCL's irrelevance tasks from the tasks that want a call at all? That is
the margins' ranking (ROC AUC, irrelevance as the positive class; 0.5 is chance). Or is it only
biased? That is where each side's margins fall around zero.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from evals.bfcl_data import is_relevance, wants_call
from evals.stats import percentile

TOP_LOGPROBS = 20  # alternatives asked for per generated token


def _opens_list(token: str) -> bool:
    return token.strip().startswith("[")


def _declines(token: str) -> bool:
    return token.strip().startswith("[]")


def _calls(token: str) -> bool:
    return token.strip().startswith("[{")


def _wants_decline(category: str) -> bool:
    """Whether a category's tasks are right only without a call (BFCL's irrelevance)."""
    return is_relevance(category) and not wants_call(category)


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def decline_margin(content: Sequence[dict[str, Any]]) -> float | None:
    """The decline margin of one reply from its per-token log-probabilities (OpenAI ``logprobs.content``).

    The deciding position is the first generated token that opens the list (`` [``, `` []``,
    `` [{"`` …). A bare ``[`` (the choice still to come) counts for neither side. A side missing from
    the listed alternatives is bounded by the lowest listed log-probability, so the margin is then a
    bound, not an estimate. None when no token opens a list or neither side is listed.
    """
    position = next((item for item in content if _opens_list(str(item.get("token", "")))), None)
    if position is None:
        return None
    listed = {str(alt["token"]): float(alt["logprob"]) for alt in position.get("top_logprobs") or []}
    listed.setdefault(str(position["token"]), float(position["logprob"]))
    decline = [value for token, value in listed.items() if _declines(token)]
    call = [value for token, value in listed.items() if _calls(token)]
    if not decline and not call:
        return None
    floor = min(listed.values())
    return round(_logsumexp(decline or [floor]) - _logsumexp(call or [floor]), 4)


def declines(margin: float, threshold: float) -> bool:
    """Whether a step with this decline margin calls nothing under ``threshold`` (above it)."""
    return margin > threshold


def _threshold_scores(records: Sequence[dict[str, Any]]) -> list[tuple[float, float]] | None:
    """Each candidate threshold with the score it would have given this run (see
    :func:`best_threshold_and_score`); None without margins on both sides."""
    groups: dict[str, list[float]] = {}
    call_rate: dict[str, float] = {}
    for category in dict.fromkeys(str(r["category"]) for r in records):
        rows = [r for r in records if r["category"] == category and r.get("decline_margin") is not None]
        if not rows:
            continue
        groups[category] = [float(r["decline_margin"]) for r in rows]
        called = [r for r in rows if r.get("calls")]
        call_rate[category] = sum(1 for r in called if r.get("correct")) / len(called) if called else 0.0
    declining = [c for c in groups if _wants_decline(c)]
    if not declining or len(declining) == len(groups):
        return None
    margins = sorted({m for values in groups.values() for m in values})
    candidates = [
        margins[0] - 1.0,
        *((a + b) / 2 for a, b in zip(margins, margins[1:], strict=False)),
        margins[-1] + 1.0,
    ]

    def score(threshold: float) -> float:
        total = 0.0
        for category, values in groups.items():
            if category in declining:
                total += sum(1 for m in values if declines(m, threshold)) / len(values)
            else:
                total += (
                    call_rate[category] * sum(1 for m in values if not declines(m, threshold)) / len(values)
                )
        return total / len(groups)

    return [(t, score(t)) for t in candidates]


def best_threshold_and_score(records: Sequence[dict[str, Any]]) -> tuple[float, float] | None:
    """The threshold that would have scored this run best, BFCL's way (the mean of the categories'
    accuracies), and that score: an irrelevance task counts as right when its margin is above it,
    a task that wants a call when its margin is not, times the share of that category's calls the
    run got right (a call made only because of the threshold is assumed as good as the calls the
    model chose to make). Candidates are the midpoints between neighbouring margins; of equally
    good ones, the middle. Chosen on a tuning split, it is applied to another
    (``--decline-threshold``); the score, an estimate on the split it was chosen on, compares
    students (snapshots of a run) on that split. None without margins on both sides.
    """
    scored = _threshold_scores(records)
    if scored is None:
        return None
    top = max(value for _, value in scored)
    best = [t for t, value in scored if value == top]
    return round(best[len(best) // 2], 3), round(top, 4)


def best_threshold(records: Sequence[dict[str, Any]]) -> float | None:
    """The threshold of :func:`best_threshold_and_score`; None without margins on both sides."""
    found = best_threshold_and_score(records)
    return None if found is None else found[0]


def reply_logprobs(message: Any) -> list[dict[str, Any]]:
    """The per-token log-probabilities an OpenAI-compatible chat reply carries (empty when none)."""
    metadata = getattr(message, "response_metadata", None) or {}
    logprobs = metadata.get("logprobs") or {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return [item for item in content or [] if isinstance(item, dict) and "token" in item]


def decline_auc(records: Iterable[dict[str, Any]]) -> float | None:
    """How well the margins rank the irrelevance tasks above the tasks that want a call (ROC AUC,
    ties counted half); None without margins on both sides."""
    to_decline: list[float] = []
    to_call: list[float] = []
    for record in records:
        margin = record.get("decline_margin")
        if margin is None:
            continue
        (to_decline if _wants_decline(str(record["category"])) else to_call).append(float(margin))
    if not to_decline or not to_call:
        return None
    wins = sum((d > c) + 0.5 * (d == c) for d in to_decline for c in to_call)
    return round(wins / (len(to_decline) * len(to_call)), 4)


def margin_summary(records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's margins: their AUC, the threshold that would have served this run best, how many
    steps a threshold turned (``decided``: declined, called) and, per category, how many leaned to
    declining and the median."""
    with_margin = [r for r in records if r.get("decline_margin") is not None]
    if not with_margin:
        return None
    by_category: dict[str, dict[str, Any]] = {}
    for category in dict.fromkeys(str(r["category"]) for r in with_margin):
        margins = [float(r["decline_margin"]) for r in with_margin if r["category"] == category]
        by_category[category] = {
            "n": len(margins),
            "leaning_to_decline": sum(1 for m in margins if m > 0),
            "median": round(percentile(margins, 50), 3),
        }
    best = best_threshold_and_score(with_margin)
    return {
        "auc": decline_auc(with_margin),
        "best_threshold": None if best is None else best[0],
        "best_threshold_accuracy": None if best is None else best[1],
        "n": len(with_margin),
        "decided": dict(Counter(str(r["decided"]) for r in with_margin if r.get("decided"))),
        "by_category": by_category,
    }
