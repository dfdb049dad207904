"""A re-plan that writes the run's own tasks again reuses them instead of running them twice."""

from __future__ import annotations

from agents.plan_reuse import reuse_kept
from core.plan import Task


def search(task_id: str, query: str) -> Task:
    return Task(id=task_id, goal=f"Look up {query}", tool="docsearch.search", args={"query": query, "k": 5})


def difference(task_id: str, first: str, second: str) -> Task:
    expression = "{{" + first + "}} - {{" + second + "}}"
    return Task(
        id=task_id,
        goal="Years between",
        tool="python.calculate",
        args={"expression": expression},
        deps=[first, second],
    )


def test_a_repeated_lookup_and_the_computation_over_it_are_the_kept_tasks() -> None:
    kept = [
        search("t1", "H. G. Wells birth year"),
        search("t2", "Rubén Darío birth year"),
        difference("t3", "t1", "t2"),
    ]
    written = [
        search("t4", "h. g.  Wells birth year"),  # letter case and spacing aside, the same call
        search("t5", "Rubén Darío birth year"),
        difference("t6", "t4", "t5"),  # over the repeats: the kept computation again
        search("t7", "Rubén Darío birth date"),
        difference("t8", "t7", "t4"),
    ]

    remaining, reused = reuse_kept(written, kept)

    assert reused == {"t4": "t1", "t5": "t2", "t6": "t3"}
    assert [task.id for task in remaining] == ["t7", "t8"]
    assert remaining[1].args == {"expression": "{{t7}} - {{t1}}"} and remaining[1].deps == ["t7", "t1"]


def test_tasks_that_ask_something_else_are_kept_as_written() -> None:
    kept = [search("t1", "Fred Niblo birth year"), Task(id="t2", goal="Recall the year", deps=["t1"])]
    written = [
        search("t3", "Peter Duffell birth year"),
        Task(id="t4", goal="Recall the year", deps=["t3"]),  # the same goal over other inputs
        Task(id="t5", goal="Recall the year", tool="clock.now", deps=["t1"]),  # another tool
    ]

    remaining, reused = reuse_kept(written, kept)

    assert reused == {} and remaining == written
