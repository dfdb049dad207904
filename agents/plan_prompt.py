"""The Planner's prompt, kept short: the candidate tools in a line each, one worked example written
with the tools this question has, and a bounded plan (``budgets.max_tasks`` tasks, a one-sentence
reasoning).

A plan call on the local 1.5B costs its prompt and its reply, token by token: the candidates are
described by their first line (cut at :data:`DESCRIPTION_CHARS`), the rules fit in six lines,
and the schema (:func:`sketch_model`) caps the reasoning and the number of tasks, so a
constrained decoder cannot write more.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, create_model

from core.plan import Task
from core.state import CandidateTool
from prompts import render
from tools.hub import QUERY_ARGS

DESCRIPTION_CHARS = 160
REASONING_CHARS = 120  # a draft, not an essay (Chain-of-Draft, seed 001 §6.3.1): tokens are time


def _cut_reasoning(value: Any) -> Any:
    """An over-long reasoning is cut, not refused (an endpoint without grammars may write more)."""
    return value[:REASONING_CHARS] if isinstance(value, str) else value


class PlanSketch(BaseModel):
    """What the planner model writes: its reasoning in a few words, then the tasks."""

    reasoning: Annotated[str, BeforeValidator(_cut_reasoning), Field(max_length=REASONING_CHARS)] = ""
    tasks: list[Task] = Field(default_factory=list)


def sketch_model(max_tasks: int) -> type[PlanSketch]:
    """:class:`PlanSketch` with at most ``max_tasks`` tasks (the bound reaches the decoder's grammar)."""
    return create_model(
        "PlanSketch",
        __base__=PlanSketch,
        tasks=(list[Task], Field(default_factory=list, max_length=max(max_tasks, 1))),
    )


def signature(tool: CandidateTool) -> str:
    """``name(required[, optional, …])``: the optional arguments in brackets, as Python's docs write
    them, so that a plan writes only what its task needs (a guessed ``"k": 1`` costs tokens and
    passages)."""
    optional = set(tool.get("optional", []))
    required = [name for name in tool.get("args", {}) if name not in optional]
    rest = [name for name in tool.get("args", {}) if name in optional]
    brackets = f"[{', ' if required else ''}{', '.join(rest)}]" if rest else ""
    return f"{tool['name']}({', '.join(required)}{brackets})"


def describe_tools(candidates: list[CandidateTool]) -> str:
    """One line per candidate tool: its signature and the first line of its description."""
    if not candidates:
        return '(no tools: every task must have "tool": null)'
    lines = []
    for tool in candidates:
        description = " ".join(tool["description"].split())
        if len(description) > DESCRIPTION_CHARS:
            description = description[: DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0] + "…"
        lines.append(f"- {signature(tool)}: {description}")
    return "\n".join(lines)


def search_argument(tool: CandidateTool) -> str | None:
    """The query argument of a candidate that is a search tool (``docsearch.search``), else None."""
    if "search" not in tool["name"].partition(".")[2].lower():
        return None
    return next((name for name in QUERY_ARGS if name in tool.get("args", {})), None)


def plan_example(candidates: list[CandidateTool]) -> str:
    """The worked example's plan, written with this question's tools: two lookups in parallel (with
    the search tool when one is listed), then the computation (with the calculator when listed)."""
    search = next(((tool["name"], arg) for tool in candidates if (arg := search_argument(tool))), None)
    calculator = next((tool["name"] for tool in candidates if "expression" in tool.get("args", {})), None)

    def lookup(task_id: str, thing: str) -> dict[str, Any]:
        tool, args = (search[0], {search[1]: f"{thing} height"}) if search else (None, {})
        return {
            "id": task_id,
            "goal": f"Height of the {thing} in meters",
            "tool": tool,
            "args": args,
            "deps": [],
            "returns": "a number",
        }

    difference = {
        "id": "t3",
        "goal": "Difference of the two heights",
        "tool": calculator,
        "args": {"expression": "abs({{t1}} - {{t2}})"} if calculator else {},  # "by how many": a size
        "deps": ["t1", "t2"],
        "returns": "meters",
    }
    tasks = [lookup("t1", "Eiffel Tower"), lookup("t2", "Statue of Liberty"), difference]
    reasoning = "Two independent lookups, then one computation."
    body = ",\n ".join(json.dumps(task, ensure_ascii=False) for task in tasks)
    return f'{{"reasoning": "{reasoning}", "tasks": [\n {body}]}}'


def plan_prompt(
    *,
    today: str,
    max_tasks: int,
    strategy: str,
    candidates: list[CandidateTool],
    query: str,
    context: str = "",
    hint: str = "",
) -> str:
    """The Planner's prompt for ``query`` over ``candidates`` (``hint``: the tool history's chains)."""
    return render(
        "planner_plan",
        today=today,
        max_tasks=max_tasks,
        strategy=strategy,
        example=plan_example(candidates),
        tools=describe_tools(candidates) + hint,
        context=context,
        query=query,
    )
