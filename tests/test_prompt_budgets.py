"""Prompt-size budgets per role: prefill dominates latency on a CPU (about 100-190 tokens/s here),
so the typical prompt of each role must stay within its budget (about 4 characters per token).

The typical prompts are the ones ``aisearch bench models`` times (``bench/role_prompts.py``)."""

from __future__ import annotations

import pytest

from bench.role_prompts import typical_prompts

BUDGETS = {
    "master": 450,
    "planner": 600,
    "executor_args": 120,
    "executor_subqueries": 170,
    # eight passages of at most 450 characters are in view: the judge's prompt stays under ~1,100 tokens
    "executor_search_judge": 1100,
    "executor_judge": 100,
    "executor_compute": 120,
    "writer": 160,
}
PROMPTS = typical_prompts()


def test_every_typical_prompt_has_a_budget() -> None:
    assert set(PROMPTS) == set(BUDGETS)


@pytest.mark.parametrize("name", BUDGETS)
def test_typical_prompt_fits_its_token_budget(name: str) -> None:
    prompt, budget = PROMPTS[name], BUDGETS[name]
    assert len(prompt) / 4 <= budget, f"{name}: ~{len(prompt) // 4} tokens > {budget}"
