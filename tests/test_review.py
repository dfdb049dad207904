"""The Master's review of a wave: which incomplete results it augments and which it reads as they are."""

from __future__ import annotations

from typing import Any

from agents.review import decide
from core.settings_groups import Budgets
from core.state import SearchState

LOOKUPS = [
    {"id": "t1", "goal": "Who founded the Acme label", "tool": "docsearch.search", "args": {"query": "Acme"}},
    {
        "id": "t2",
        "goal": "Who founded the Zenith label",
        "tool": "docsearch.search",
        "args": {"query": "Zenith"},
    },
]
COMBINE = {"id": "t3", "goal": "What the two founders have in common", "tool": None, "deps": ["t1", "t2"]}
SUMMARY = {"id": "t4", "goal": "One sentence on both labels", "tool": None, "deps": ["t3"]}


def result(tid: str, status: str, tool: str | None = "docsearch.search") -> dict[str, Any]:
    return {
        "task_id": tid, "goal": tid, "tool": tool, "status": status, "output": "", "error": None,
        "evidence_ids": [], "tool_calls": [], "started_at": 0.0, "finished_at": 1.0, "plan_version": 1,
    }  # fmt: skip


def state(tasks: list[dict[str, Any]], statuses: dict[str, str], **extra: Any) -> SearchState:
    """The plan's ``tasks`` with results of ``statuses``, each run with the tool its task binds."""
    tools = {task["id"]: task["tool"] for task in tasks}
    results = {tid: result(tid, status, tools[tid]) for tid, status in statuses.items()}
    return SearchState(plan={"tasks": tasks}, results=results, waves=1, replans=0, **extra)  # type: ignore[typeddict-item]


def test_a_tool_free_task_over_complete_lookups_goes_to_the_writer_not_to_an_augment() -> None:
    verdict = decide(state([*LOOKUPS, COMBINE], {"t1": "ok", "t2": "ok", "t3": "incomplete"}), Budgets())

    assert verdict.decision == "write"
    assert verdict.read_as_is == ["t3"] and verdict.incomplete == []
    assert "read as they are" in verdict.reason
    assert "read_as_is" not in verdict.record(), "the review record keeps its contract"


def test_a_calculator_step_the_executor_model_answered_counts_as_tool_free() -> None:
    """A calculator whose filled-in expression held words goes to the executor model: its result
    names no tool, whatever the plan bound."""
    calculator = {**COMBINE, "tool": "python.calculate", "args": {"expression": "{{t1}} - {{t2}}"}}
    ran = state([*LOOKUPS, calculator], {"t1": "ok", "t2": "ok", "t3": "incomplete"})
    ran["results"]["t3"]["tool"] = None

    verdict = decide(ran, Budgets())

    assert verdict.decision == "write" and verdict.read_as_is == ["t3"]


def test_the_tasks_waiting_on_a_result_read_as_it_is_run_next() -> None:
    verdict = decide(
        state([*LOOKUPS, COMBINE, SUMMARY], {"t1": "ok", "t2": "ok", "t3": "incomplete"}), Budgets()
    )

    assert verdict.decision == "dispatch" and verdict.read_as_is == ["t3"]


def test_an_incomplete_lookup_below_it_still_makes_the_planner_augment() -> None:
    verdict = decide(
        state([*LOOKUPS, COMBINE], {"t1": "ok", "t2": "incomplete", "t3": "incomplete"}), Budgets()
    )

    assert verdict.decision == "augment"
    assert verdict.incomplete == ["t2", "t3"] and verdict.read_as_is == []


def test_a_tool_free_task_with_no_inputs_is_augmented_as_before() -> None:
    recall = {"id": "t1", "goal": "Recall who founded Acme", "tool": None}

    verdict = decide(state([recall], {"t1": "incomplete"}), Budgets())

    assert verdict.decision == "augment" and verdict.incomplete == ["t1"]


def test_a_result_already_settled_is_not_read_again() -> None:
    settled = state([*LOOKUPS, COMBINE], {"t1": "ok", "t2": "ok", "t3": "incomplete"}, augmented=["t3"])

    verdict = decide(settled, Budgets())

    assert verdict.decision == "write" and verdict.read_as_is == []
