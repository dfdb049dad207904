"""A scripted team whose plan is two slow lookups on the sleepy test server, then a subtraction
on the python server (``tests/servers/sleepy_server.py``): to watch a schedule on timestamps."""

from __future__ import annotations

from typing import Any

from tests.conftest import Team
from tests.support.fakes import EXEC_JUDGE, MASTER, PLANNER, WRITER, assessment

ANSWER = "Emperor Wu of Han"
QUERY = "Who is elder, Emperor Han-Wu or Julius Caesar, and by how many years?"


def plan_reply(seconds: float) -> dict[str, Any]:
    """Two slow lookups with no dependencies, then a subtraction of their years."""

    def lookup(task_id: str, entity: str) -> dict[str, Any]:
        return {
            "id": task_id,
            "goal": f"Birth year (BC) of {entity}",
            "tool": "sleepy.lookup",
            "args": {"entity": entity, "seconds": seconds},
            "deps": [],
            "returns": "a year",
        }

    difference = {
        "id": "t3",
        "goal": "Years between the two births",
        "tool": "python.calculate",
        "args": {"expression": "{{t1.year}} - {{t2.year}}"},
        "deps": ["t1", "t2"],
        "returns": "years",
    }
    tasks = [lookup("t1", "Emperor Wu of Han"), lookup("t2", "Julius Caesar"), difference]
    return {"reasoning": "Two independent lookups, then a subtraction.", "tasks": tasks}


def judge(prompt: str) -> dict[str, Any]:
    """The executor's verdict: the tool output, whole, is the task's answer."""
    output = prompt.split("Tool output:\n", 1)[1].split("\n\nDoes the output", 1)[0]
    return {"sufficient": True, "result": output, "retry_args": None}


def scripted(team: Team, seconds: float) -> Team:
    """``team`` scripted for :data:`QUERY`: the Planner writes :func:`plan_reply`, the executor takes
    each tool output whole, the Writer answers :data:`ANSWER`."""
    team["master"].on(MASTER, assessment("complex", "parallel", resolved=QUERY))
    team["planner"].on(PLANNER, plan_reply(seconds))
    team["master"].on(EXEC_JUDGE, judge)
    team["writer"].on(WRITER, ANSWER)
    return team
