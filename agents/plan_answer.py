"""What the Planner's tasks found, for the Writer: their values, and the answer a computation settled.

On the Planner route the 1.5B Writer re-did the plan's arithmetic from the passages and got it
wrong with the right value in its prompt ("1996 … 2014, making a difference of 8 years" beside
"…: 18"). So the values the tasks returned are listed in the prompt (:func:`plan_findings`), and a
quantity the plan computed answers a "how many / how much" question outright
(:func:`plan_settled`): the Writer's first turn is that number and the Writer only explains it, as
with a comparison settled in code (``agents/compare.py``).
"""

from __future__ import annotations

import re

from agents.facets import answer_choices
from core.plan import Plan, Task, current_plan
from core.state import SearchState, resolved_query
from tools.question_forms import HOW_MUCH

MAX_FINDING_CHARS = 80  # a task's value (a year, a number, a name), not a passage or a summary
NUMBER = re.compile(r"^[-−]?\s*(\d+(?:\.\d+)?)$")


def plan_findings(state: SearchState) -> str:
    """The values the Planner's tasks returned, in plan order, for the Writer's prompt ("" when
    none): a computed difference is read from the calculator's task, not worked out again."""
    plan = state.get("plan")
    if state.get("route") != "planner" or not plan:
        return ""
    results = state.get("results", {})
    found = []
    for task in plan["tasks"]:
        result = results.get(task["id"])
        if result is None or result["status"] != "ok":
            continue
        value = " ".join(result["output"].split())
        if 0 < len(value) <= MAX_FINDING_CHARS:
            found.append(f"{result['goal'].rstrip(' ?.')}: {value}")
    return "Found by the plan's tasks: " + "; ".join(found) + "\n" if found else ""


def plan_settled(state: SearchState) -> str | None:
    """The number a "how many / how much" question is answered with when the plan computed it.

    Only when the plan ends in one task (nothing depends on it) that a tool ran over earlier tasks'
    results, ok, with a number as its whole output; and not for a choice question ("Who is elder,
    A or B, and by how many years?" needs the name too). A count or an amount is a magnitude, so a
    difference subtracted in the other order (``-19``) answers as ``19``.
    """
    plan = current_plan(state)
    question = resolved_query(state)
    if state.get("route") != "planner" or plan is None or not HOW_MUCH.search(question):
        return None
    if answer_choices(question):
        return None
    sinks = _sinks(plan)
    if len(sinks) != 1:
        return None
    task = sinks[0]
    result = state.get("results", {}).get(task.id)
    if result is None or result["status"] != "ok" or not task.tool or not task.deps:
        return None
    number = NUMBER.match(result["output"].strip())
    return number.group(1) if number else None


def _sinks(plan: Plan) -> list[Task]:
    """The tasks no other task depends on."""
    needed = {dep for task in plan.tasks for dep in task.deps}
    return [task for task in plan.tasks if task.id not in needed]
