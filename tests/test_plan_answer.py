"""The Writer's view of the Planner's results: task values, and the quantity a plan computed."""

from __future__ import annotations

from typing import Any

from agents.plan_answer import plan_findings, plan_reasons, plan_settled

HOW_MANY = "How many years after Gunnar Nelson was born was Florence Welch born?"


def task(tid: str, tool: str | None, deps: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {"id": tid, "goal": f"goal {tid}", "tool": tool, "args": {}, "deps": list(deps), "returns": ""}


def result(tid: str, output: str, status: str = "ok", tool: str | None = None) -> dict[str, Any]:
    return {"task_id": tid, "goal": f"goal {tid}", "status": status, "output": output, "tool": tool}


def state(
    query: str, tasks: list[dict], outputs: dict[str, str], route: str = "planner", **extra: Any
) -> Any:
    tools = {t["id"]: t["tool"] for t in tasks}  # the tool that ran each task: the plan's
    return {
        "query": query,
        "route": route,
        "plan": {"tasks": tasks, "version": 1},
        "results": {tid: result(tid, out, tool=tools.get(tid)) for tid, out in outputs.items()},
        **extra,
    }


LOOKUPS_THEN_DIFFERENCE = [
    task("t1", "docs.search"),
    task("t2", "docs.search"),
    task("t3", "python.calculate", ["t1", "t2"]),
]


def test_a_difference_the_plan_computed_answers_how_many_as_a_magnitude() -> None:
    computed = state(HOW_MANY, LOOKUPS_THEN_DIFFERENCE, {"t1": "1967", "t2": "1986", "t3": "-19"})
    assert plan_settled(computed) == "19"
    assert (
        plan_findings(computed) == "Found by the plan's tasks: goal t1: 1967; goal t2: 1986; goal t3: -19\n"
    )


def test_nothing_is_settled_without_a_computed_number_for_a_how_many_question() -> None:
    outputs = {"t1": "1967", "t2": "1986", "t3": "-19"}
    assert (
        plan_settled(
            state("Who was born first, Gunnar Nelson or Florence Welch?", LOOKUPS_THEN_DIFFERENCE, outputs)
        )
        is None
    )
    assert (
        plan_settled(
            state(
                "Who is elder, Emperor Han-Wu or Caesar, and by how many years?",
                LOOKUPS_THEN_DIFFERENCE,
                outputs,
            )
        )
        is None
    )
    assert plan_settled(state(HOW_MANY, LOOKUPS_THEN_DIFFERENCE, outputs, route="executor")) is None
    assert plan_settled(state(HOW_MANY, LOOKUPS_THEN_DIFFERENCE, {**outputs, "t3": "about 19 years"})) is None
    failed = state(HOW_MANY, LOOKUPS_THEN_DIFFERENCE, outputs)
    failed["results"]["t3"]["status"] = "failed"
    assert plan_settled(failed) is None
    two_ends = [
        task("t1", "docs.search"),
        task("t2", "python.calculate", ["t1"]),
        task("t3", "python.calculate", ["t1"]),
    ]
    assert plan_settled(state(HOW_MANY, two_ends, {"t1": "3", "t2": "4", "t3": "5"})) is None
    a_lookup = [task("t1", "docs.search")]
    assert plan_settled(state("How many moons does Mars have?", a_lookup, {"t1": "2"})) is None


def evidence(eid: str, content: str) -> dict[str, Any]:
    return {"id": eid, "title": eid, "content": content, "url": "", "task_id": ""}


def test_a_computed_quantity_is_explained_by_its_tasks_each_value_cited() -> None:
    computed = state(HOW_MANY, LOOKUPS_THEN_DIFFERENCE, {"t1": "1967", "t2": "1986", "t3": "-19"})
    results = computed["results"]
    results["t1"]["evidence_ids"] = ["a", "b"]
    results["t2"]["evidence_ids"] = ["c"]
    results["t3"]["evidence_ids"] = []
    results["t3"]["tool_calls"] = [{"ok": True, "args": {"expression": "1967 - 1986"}}]
    sources = [
        evidence("a", "Gunnar Nelson is a fighter."),
        evidence("b", "Nelson was born in 1967."),
        evidence("c", "Florence Welch (born 1986) is a singer."),
    ]
    assert plan_reasons(computed, sources) == (
        "goal t1: 1967 [2]. goal t2: 1986 [3]. goal t3: 1967 - 1986 = -19 [2][3]."
    )
    # a value none of its task's passages states is left to the Writer's own words
    results["t2"]["output"] = "1985"
    assert plan_reasons(computed, sources) is None
    # nothing settled, nothing to explain
    assert (
        plan_reasons(
            state("Who was born first, Gunnar Nelson or Florence Welch?", LOOKUPS_THEN_DIFFERENCE, {}),
            sources,
        )
        is None
    )
