"""The typical prompt of each role and step, in one place: ``aisearch bench models`` times the roles'
calls on them and ``tests/test_prompt_budgets.py`` holds each one to its token budget.

The question is the paper's comparison ("Who is elder, …, by how many years?"), the tools a
calculator, a sandbox and a clock, the documents line the one a first run's ``docs`` collection gives
the Master, and the date fixed, so the prompts (and their lengths) change only with the templates.
"""

from __future__ import annotations

import json

from agents.assessment import assess_prompt
from agents.plan_prompt import plan_prompt
from agents.writer import BRIEF
from core.state import CandidateTool
from prompts import render

TODAY = "Sunday, 2026-11-22 09:00 UTC"
QUERY = "Who is elder, Emperor Han-Wu or Emperor Caesar, by how many years?"
ARITHMETIC = "What is 17 * 23 + 4?"
TOOLS: list[CandidateTool] = [
    {
        "name": "python.calculate",
        "description": "Evaluate an arithmetic expression exactly.",
        "args": {"expression": "string"},
        "server": "python",
        "score": None,
    },
    {
        "name": "python.run_python",
        "description": "Run short Python code in a sandbox.",
        "args": {"code": "string"},
        "server": "python",
        "score": None,
    },
    {
        "name": "clock.now",
        "description": "Current date and time in a timezone.",
        "args": {"timezone": "string"},
        "server": "clock",
        "score": None,
    },
]
DOCUMENTS = (
    "- docsearch.search: Search local documents (docs: the Python standard library documentation, "
    "1676 passages) for passages with an id, title, source and snippet."
)
SOURCES = (
    "[1] (model knowledge) Birth year of Emperor Wu of Han: 156 BC\n"
    "[2] (model knowledge) Birth year of Julius Caesar: 100 BC\n"
    '[3] python.calculate({"expression": "156 - 100"}): 56'
)
PASSAGE_CHARS = 450  # the judge sees eight passages cut to this many characters


def executor_args_prompt(goal: str, tool: CandidateTool) -> str:
    """The executor's prompt for the arguments of one call of ``tool``."""
    return render(
        "executor_args",
        today=TODAY,
        goal=goal,
        inputs="",
        tool=tool["name"],
        description=tool["description"],
        schema=json.dumps(tool["args"]),
        previous="",
    )


def typical_prompts() -> dict[str, str]:
    """``step -> prompt``: the Master's assessment, the plan, the executor's steps and the answer."""
    return {
        "master": assess_prompt(TODAY, "(none)", QUERY, DOCUMENTS),
        "planner": plan_prompt(today=TODAY, max_tasks=8, strategy="parallel", candidates=TOOLS, query=QUERY),
        "executor_args": executor_args_prompt(ARITHMETIC, TOOLS[0]),
        "executor_subqueries": render(
            "executor_subqueries", goal="How do I pretty-print JSON?", inputs="", previous=""
        ),
        "executor_search_judge": render(
            "executor_search_judge",
            goal="How do I pretty-print JSON?",
            inputs="",
            passages="\n".join(f"[{n}] json: " + "x" * PASSAGE_CHARS for n in range(1, 9)),
        ),
        "executor_judge": render("executor_judge", goal=ARITHMETIC, output="395"),
        "executor_compute": render(
            "executor_compute",
            today=TODAY,
            query=QUERY,
            goal="Find the birth year of Emperor Wu of Han",
            returns="a number",
            inputs="",
        ),
        "writer": render(
            "writer_answer",
            today=TODAY,
            findings="",
            missing="",
            query=QUERY,
            choices="",
            how=BRIEF.format(form="a name, a date, a number or a few words"),
            sources=SOURCES,
        ),
    }
