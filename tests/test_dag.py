"""Plan validation, reference substitution and scheduling helpers."""

from __future__ import annotations

import pytest

from core.plan import Plan, PlanError, ready_tasks, substitute, validate_plan

TOOLS = ["python.calculate", "clock.now"]


def plan(*tasks: dict) -> dict:
    return {"tasks": list(tasks)}


def test_valid_plan_has_topological_waves() -> None:
    checked = validate_plan(
        plan(
            {"id": "t1", "goal": "a"},
            {"id": "t2", "goal": "b"},
            {
                "id": "t3",
                "goal": "c",
                "tool": "python.calculate",
                "args": {"expression": "{{t1}}-{{t2.year}}"},
                "deps": ["t1", "t2"],
            },
        ),
        candidate_tools=TOOLS,
        max_tasks=5,
    )
    assert checked.waves() == [["t1", "t2"], ["t3"]]
    assert checked.descendants("t1") == {"t3"}


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ([{"id": "t1", "goal": "a", "deps": ["t2"]}, {"id": "t2", "goal": "b", "deps": ["t1"]}], "cycle"),
        ([{"id": "t1", "goal": "a", "tool": "web.search"}], "not among the candidate tools"),
        ([{"id": "t1", "goal": "a"}, {"id": "t2", "goal": "b", "args": {"x": "{{t1}}"}}], "not in its deps"),
        ([{"id": "t1", "goal": "a", "deps": ["t9"]}], "dependency 't9' is not a task id"),
        ([{"id": "t1", "goal": "a"}, {"id": "t1", "goal": "b"}], "duplicate task ids"),
        ([{"id": f"t{i}", "goal": "a"} for i in range(6)], "at most 5"),
        ([], "no tasks"),
        ([{"id": "t1"}], "goal"),
        ([{"id": "t1", "goal": "a", "tool": ["python.calculate", "clock.now"]}], "tool"),
    ],
)
def test_invalid_plans_are_rejected_with_a_specific_error(tasks: list, message: str) -> None:
    with pytest.raises(PlanError) as error:
        validate_plan(plan(*tasks), candidate_tools=TOOLS, max_tasks=5)
    assert message in str(error.value)


def test_known_ids_may_be_dependencies_when_replanning() -> None:
    validate_plan(
        plan({"id": "t4", "goal": "x", "deps": ["t1"]}), candidate_tools=[], max_tasks=3, known_ids={"t1"}
    )


def test_substitute_keeps_types_for_whole_references_and_text_inside_strings() -> None:
    outputs = {"t1": "156", "t2": '{"year": 100, "names": ["Gaius"]}'}
    assert substitute(
        {"a": "{{t1}}", "b": "{{ t2.year }}", "c": "{{t1}} - {{t2.year}}", "d": ["{{t2.names.0}}"]}, outputs
    ) == {"a": "156", "b": 100, "c": "156 - 100", "d": ["Gaius"]}
    assert substitute("{{t2.missing}}", outputs) == outputs["t2"]
    assert substitute("{{t9}}", outputs) == "{{t9}}"


def test_ready_tasks_wait_for_every_parent() -> None:
    p = Plan.model_validate(plan({"id": "t1", "goal": "a"}, {"id": "t2", "goal": "b", "deps": ["t1"]}))
    assert [t.id for t in ready_tasks(p, done=set(), started=set())] == ["t1"]
    assert [t.id for t in ready_tasks(p, done={"t1"}, started={"t1"})] == ["t2"]
    assert ready_tasks(p, done=set(), started={"t1"}) == []
