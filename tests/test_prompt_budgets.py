"""Prompt-size budgets per role: prefill dominates latency on a CPU (about 100-190 tokens/s here),
so the typical prompt of each role must stay within its budget (about 4 characters per token)."""

from __future__ import annotations

import json

import pytest

from agents.master import assess_prompt
from agents.plan_prompt import plan_prompt
from prompts import render

TOOLS = [
    {
        "name": "python.calculate",
        "description": "Evaluate an arithmetic expression exactly.",
        "args": {"expression": "string"},
    },
    {
        "name": "python.run_python",
        "description": "Run short Python code in a sandbox.",
        "args": {"code": "string"},
    },
    {
        "name": "clock.now",
        "description": "Current date and time in a timezone.",
        "args": {"timezone": "string"},
    },
]
QUERY = "Who is elder, Emperor Han-Wu or Emperor Caesar, by how many years?"
TODAY = "Sunday, 2026-11-22 09:00 UTC"
DOCUMENTS = (
    "- docsearch.search: Search local documents (docs: the Python standard library documentation, "
    "1676 passages) for passages with an id, title, source and snippet."
)

PROMPTS = {
    "master": (assess_prompt(TODAY, "(none)", QUERY, DOCUMENTS), 450),
    "planner": (
        plan_prompt(today=TODAY, max_tasks=8, strategy="parallel", candidates=TOOLS, query=QUERY),
        600,
    ),
    "executor_args": (
        render(
            "executor_args",
            today=TODAY,
            goal="What is 17 * 23 + 4?",
            inputs="",
            tool="python.calculate",
            description=TOOLS[0]["description"],
            schema=json.dumps(TOOLS[0]["args"]),
            previous="",
        ),
        120,
    ),
    "executor_subqueries": (
        render("executor_subqueries", goal="How do I pretty-print JSON?", inputs="", previous=""),
        170,
    ),
    # eight passages of at most 450 characters are in view: the judge's prompt stays under ~1,100 tokens
    "executor_search_judge": (
        render(
            "executor_search_judge",
            goal="How do I pretty-print JSON?",
            inputs="",
            passages="\n".join(f"[{n}] json: " + "x" * 450 for n in range(1, 9)),
        ),
        1100,
    ),
    "executor_judge": (render("executor_judge", goal="What is 17 * 23 + 4?", output="395"), 100),
    "executor_compute": (
        render(
            "executor_compute",
            today=TODAY,
            query=QUERY,
            goal="Find the birth year of Emperor Wu of Han",
            returns="a number",
            inputs="",
        ),
        120,
    ),
}


@pytest.mark.parametrize("name", PROMPTS)
def test_typical_prompt_fits_its_token_budget(name: str) -> None:
    prompt, budget = PROMPTS[name]
    assert len(prompt) / 4 <= budget, f"{name}: ~{len(prompt) // 4} tokens > {budget}"
