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
from collections.abc import Iterable, Sequence
from typing import Any

from evals.bfcl_data import is_relevance, wants_call

TOP_LOGPROBS = 20  # alternatives asked for per generated token


def _opens_list(token: str) -> bool:
    return token.strip().startswith("[")


def _declines(token: str) -> bool:
    return token.strip().startswith("[]")


def _calls(token: str) -> bool:
    return token.strip().startswith("[{")


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


def reply_logprobs(message: Any) -> list[dict[str, Any]]:
    """The per-token log-probabilities an OpenAI-compatible chat reply carries (empty when none)."""
    metadata = getattr(message, "response_metadata", None) or {}
    logprobs = metadata.get("logprobs") or {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return [item for item in content or [] if isinstance(item, dict) and "token" in item]


def decline_auc(records: Iterable[dict[str, Any]]) -> float | None:
    """How well the margins rank the irrelevance tasks above the tasks that want a call (ROC AUC,
    ties counted half); None without margins on both sides."""
    declines: list[float] = []
    calls: list[float] = []
    for record in records:
        margin = record.get("decline_margin")
        if margin is None:
            continue
        category = str(record["category"])
        (calls if not is_relevance(category) or wants_call(category) else declines).append(float(margin))
    if not declines or not calls:
        return None
    wins = sum((d > c) + 0.5 * (d == c) for d in declines for c in calls)
    return round(wins / (len(declines) * len(calls)), 4)


def margin_summary(records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's margins: their AUC and, per category, how many leaned to declining and the median."""
    with_margin = [r for r in records if r.get("decline_margin") is not None]
    if not with_margin:
        return None
    by_category: dict[str, dict[str, Any]] = {}
    for category in dict.fromkeys(str(r["category"]) for r in with_margin):
        margins = sorted(float(r["decline_margin"]) for r in with_margin if r["category"] == category)
        middle = len(margins) // 2
        median = margins[middle] if len(margins) % 2 else (margins[middle - 1] + margins[middle]) / 2
        by_category[category] = {
            "n": len(margins),
            "leaning_to_decline": sum(1 for m in margins if m > 0),
            "median": round(median, 3),
        }
    return {"auc": decline_auc(with_margin), "n": len(with_margin), "by_category": by_category}
