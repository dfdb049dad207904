"""Statistics: percentile, NWR, sign test, paired bootstrap, agreement."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evals.stats import (
    agreement,
    bootstrap_mean_diff_ci,
    bootstrap_nwr_ci,
    cohen_kappa,
    mean,
    nwr,
    percentile,
    sign_test,
)


def test_percentile_interpolates_linearly_on_a_0_to_100_scale():
    values = [40.0, 10.0, 30.0, 20.0]
    assert percentile(values, 0) == 10.0
    assert percentile(values, 50) == pytest.approx(25.0)
    assert percentile(values, 80) == pytest.approx(34.0)  # position 2.4 between 30 and 40
    assert percentile(values, 100) == 40.0
    assert percentile([7.0], 80) == 7.0
    assert percentile([], 50) == 0.0


def test_there_is_one_percentile_and_one_scale():
    """``evals.stats.percentile`` is the evaluations' only percentile; ``bench/`` uses it or numpy's
    (a benchmark may import the evaluation's metrics); every call passes ``q`` on 0..100, not 0..1
    (checked on the source: importing the modules pulls in the model stack)."""
    repo = Path(__file__).resolve().parents[1]
    scales: dict[str, list[float]] = {"evals": [], "bench": []}
    for path in sorted([*(repo / "evals").glob("*.py"), *(repo / "bench").glob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = path.parent.name
        defined = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        imported = [
            (n.module, alias.name)
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom)
            for alias in n.names
        ]
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and "percentile" in (getattr(n.func, "id", None), getattr(n.func, "attr", None))
        ]
        if path.relative_to(repo) != Path("evals/stats.py"):
            assert "percentile" not in defined, path.name
            if package == "evals" and calls:
                assert ("evals.stats", "percentile") in imported, path.name
        if package == "bench":
            ours = ("evals.stats", "percentile") in imported
            assert all(ours or getattr(n.func, "value", None) is not None for n in calls), path.name
        scales[package] += [n.args[1].value for n in calls if isinstance(n.args[1], ast.Constant)]
    assert scales["evals"] and scales["bench"]
    assert all(q >= 1 for q in scales["evals"] + scales["bench"]), scales


def test_mean():
    assert mean([1.0, 2.0, 6.0]) == 3.0
    assert mean([]) == 0.0


def test_nwr_on_hand_made_outcomes():
    outcomes = ["win"] * 7 + ["lose"] * 2 + ["tie"]
    assert nwr(outcomes) == pytest.approx(0.5)  # (7 - 2) / 10
    assert nwr(["lose", "tie"]) == pytest.approx(-0.5)
    assert nwr(["tie", "tie"]) == 0.0
    assert nwr([]) == 0.0


def test_sign_test_exact_two_sided():
    # 7 wins, 2 losses (tie dropped): 2 * (C(9,0) + C(9,1) + C(9,2)) / 2^9 = 92 / 512
    assert sign_test(7, 2) == pytest.approx(92 / 512)
    assert round(sign_test(7, 2), 4) == 0.1797
    assert sign_test(2, 7) == sign_test(7, 2)
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(3, 3) == 1.0  # capped
    assert sign_test(0, 0) == 1.0


def test_bootstrap_nwr_ci_contains_the_estimate_and_is_deterministic():
    outcomes = ["win"] * 7 + ["lose"] * 2 + ["tie"]
    low, high = bootstrap_nwr_ci(outcomes, iters=500, seed=3)
    assert -1.0 <= low <= nwr(outcomes) <= high <= 1.0
    assert low < high
    assert bootstrap_nwr_ci(outcomes, iters=500, seed=3) == (low, high)
    assert bootstrap_nwr_ci(outcomes, iters=500, seed=4) != (low, high)
    assert bootstrap_nwr_ci(["win"] * 5) == (1.0, 1.0)
    assert bootstrap_nwr_ci([]) == (0.0, 0.0)


def test_bootstrap_mean_diff_ci_is_paired():
    a = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    b = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    low, high = bootstrap_mean_diff_ci(a, b, iters=500, seed=1)
    assert low <= mean(a) - mean(b) <= high
    assert bootstrap_mean_diff_ci(a, b, iters=500, seed=1) == (low, high)
    # identical pairs: every resample has difference 0, however unequal the scores across questions
    assert bootstrap_mean_diff_ci([0.0, 1.0, 0.5], [0.0, 1.0, 0.5]) == (0.0, 0.0)
    assert bootstrap_mean_diff_ci([], []) == (0.0, 0.0)
    with pytest.raises(ValueError):
        bootstrap_mean_diff_ci([1.0], [])


def test_agreement_and_kappa():
    judge = [True, True, False, False]
    em = [True, False, False, False]
    assert agreement(judge, em) == 0.75
    # p_o 0.75, p_e = (2*1 + 2*3) / 16 = 0.5 -> kappa 0.5
    assert cohen_kappa(judge, em) == pytest.approx(0.5)
    assert cohen_kappa([True, True], [True, True]) == 1.0
    assert agreement([], []) == 0.0
    with pytest.raises(ValueError):
        agreement([1], [1, 2])
