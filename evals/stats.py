"""Statistics for the evaluations: percentiles, NWR, sign test, paired bootstrap, agreement.

Pure Python (``math``, ``random``) so the numbers do not depend on numpy's version, and every
resampling takes a seed so a report is reproducible.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable, Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (``q`` on 0..100) by linear interpolation (numpy's default).

    Args:
        values: the sample, in any order.
        q: the percentile, 0..100 (50 is the median, 80 the P80).

    Returns:
        The interpolated value, or 0.0 for an empty sample.
    """
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * min(max(q, 0.0), 100.0) / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean, 0.0 for an empty sample.

    Args:
        values: the sample.
    """
    return sum(values) / len(values) if values else 0.0


def nwr(outcomes: Sequence[str]) -> float:
    """Normalised win rate (seed 001 Eq. 46): ``(W - L) / (W + T + L)``, 0.0 when empty.

    Args:
        outcomes: per-question ``"win"``, ``"tie"`` or ``"lose"`` of the system against the baseline.
    """
    counts = Counter(outcomes)
    total = counts["win"] + counts["tie"] + counts["lose"]
    return (counts["win"] - counts["lose"]) / total if total else 0.0


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided binomial sign test p-value under p = 0.5 (ties are dropped beforehand).

    Args:
        wins: questions the system won.
        losses: questions the system lost.

    Returns:
        The p-value, capped at 1.0; 1.0 when there is nothing to test.
    """
    n = wins + losses
    if n <= 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / (1 << n)  # 2**n, as an int
    return min(1.0, 2 * tail)


def _interval(samples: list[float], alpha: float) -> tuple[float, float]:
    return percentile(samples, 100 * alpha / 2), percentile(samples, 100 * (1 - alpha / 2))


def bootstrap_nwr_ci(
    outcomes: Sequence[str], iters: int = 2000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the NWR, resampling questions.

    Args:
        outcomes: per-question ``"win"`` / ``"tie"`` / ``"lose"``.
        iters: bootstrap replicates.
        alpha: 1 - confidence (0.05 gives a 95% interval).
        seed: seed of the private ``random.Random``, so the interval is reproducible.

    Returns:
        ``(low, high)``; ``(0.0, 0.0)`` for no outcomes.
    """
    items = list(outcomes)
    if not items:
        return 0.0, 0.0
    rng = random.Random(seed)
    samples = [nwr(rng.choices(items, k=len(items))) for _ in range(iters)]
    return _interval(samples, alpha)


def bootstrap_mean_ci(
    values: Sequence[float], iters: int = 2000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean of one sample, resampling its items.

    Args:
        values: the sample (e.g. one system's per-question judge scores).
        iters: bootstrap replicates.
        alpha: 1 - confidence (0.05 gives a 95% interval).
        seed: seed of the private ``random.Random``, so the interval is reproducible.

    Returns:
        ``(low, high)``; ``(0.0, 0.0)`` for an empty sample.
    """
    items = list(values)
    if not items:
        return 0.0, 0.0
    rng = random.Random(seed)
    samples = [sum(rng.choices(items, k=len(items))) / len(items) for _ in range(iters)]
    return _interval(samples, alpha)


def bootstrap_mean_diff_ci(
    a_values: Sequence[float],
    b_values: Sequence[float],
    iters: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """Paired bootstrap confidence interval of ``mean(a) - mean(b)``, resampling question indices.

    Args:
        a_values: per-question scores of the system under test.
        b_values: per-question scores of the baseline, aligned with ``a_values``.
        iters: bootstrap replicates.
        alpha: 1 - confidence (0.05 gives a 95% interval).
        seed: seed of the private ``random.Random``, so the interval is reproducible.

    Returns:
        ``(low, high)``; ``(0.0, 0.0)`` for no questions.

    Raises:
        ValueError: when the two lists are not paired (different lengths).
    """
    if len(a_values) != len(b_values):
        raise ValueError(f"paired bootstrap needs equal lengths, got {len(a_values)} and {len(b_values)}")
    n = len(a_values)
    if n == 0:
        return 0.0, 0.0
    diffs = [a - b for a, b in zip(a_values, b_values, strict=True)]
    rng = random.Random(seed)
    samples = [sum(rng.choices(diffs, k=n)) / n for _ in range(iters)]
    return _interval(samples, alpha)


def agreement(a_labels: Sequence[Hashable], b_labels: Sequence[Hashable]) -> float:
    """Share of positions where the two label sequences agree (0.0 when empty).

    Args:
        a_labels: labels from one rater (e.g. the judge's "correct").
        b_labels: labels from the other rater (e.g. exact match), aligned with ``a_labels``.

    Raises:
        ValueError: when the sequences differ in length.
    """
    if len(a_labels) != len(b_labels):
        raise ValueError(f"agreement needs equal lengths, got {len(a_labels)} and {len(b_labels)}")
    if not a_labels:
        return 0.0
    return sum(a == b for a, b in zip(a_labels, b_labels, strict=True)) / len(a_labels)


def cohen_kappa(a_labels: Sequence[Hashable], b_labels: Sequence[Hashable]) -> float:
    """Cohen's kappa: agreement corrected for chance, ``(p_o - p_e) / (1 - p_e)``.

    When chance agreement is already 1 (both raters used a single, identical label), kappa is 1.0
    if they agree everywhere and 0.0 otherwise. 0.0 for empty input.

    Args:
        a_labels: labels from one rater.
        b_labels: labels from the other rater, aligned with ``a_labels``.

    Raises:
        ValueError: when the sequences differ in length.
    """
    observed = agreement(a_labels, b_labels)
    n = len(a_labels)
    if n == 0:
        return 0.0
    count_a, count_b = Counter(a_labels), Counter(b_labels)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return (observed - expected) / (1 - expected)
