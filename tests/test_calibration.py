"""Small-model safeguards: the Master's complexity calibration and the Planner's id renumbering."""

from __future__ import annotations

from agents.master import AssessmentReply, calibrate
from agents.planner import _renumber
from core.plan import Task


def reply(complexity: str, facts: list[str], external: bool = True) -> AssessmentReply:
    return AssessmentReply(
        rationale="r",
        resolved_query="q",
        intent="i",
        facts_to_find=facts,
        complexity=complexity,
        needs_external_info=external,
        needs_decomposition=False,
        strategy="direct",
    )


def test_comparison_called_simple_by_the_model_is_escalated_to_complex() -> None:
    query = "Who is elder, Emperor Han-Wu or Emperor Caesar, by how many years?"
    result = calibrate(reply("simple", ["birth of Wu"]), query)
    assert (result.complexity, result.escalated, result.strategy) == ("complex", "rules", "parallel")
    assert result.needs_decomposition and result.needs_external_info


def test_two_outside_facts_make_a_query_complex_but_a_definition_stays_simple() -> None:
    two = calibrate(
        reply("simple", ["director of Titanic", "his birth year"]),
        "Who directed Titanic and when was he born?",
    )
    assert (two.complexity, two.escalated) == ("complex", "facts")
    zip_doc = calibrate(
        reply("simple", ["zip", "iterables"], external=False), "What does the Python function zip do?"
    )
    assert zip_doc.complexity == "simple" and zip_doc.escalated is None


def test_time_and_arithmetic_are_at_least_moderate_and_the_model_is_never_lowered() -> None:
    assert calibrate(reply("simple", []), "What time is it in Tokyo now?").complexity == "moderate"
    assert calibrate(reply("simple", []), "What is 17 * 23 + 4?").complexity == "moderate"
    assert calibrate(reply("complex", []), "What is the name of Emperor Han-Wu?").complexity == "complex"


def test_replanned_tasks_reusing_taken_ids_are_renumbered_with_their_references() -> None:
    tasks = [
        Task(id="t1", goal="Caesar's birth year"),
        Task(
            id="t2",
            goal="difference of {{t1}} and t0",
            tool="python.calculate",
            args={"expression": "{{t0}} - {{t1.year}}"},
            deps=["t0", "t1"],
        ),
    ]
    renamed = _renumber(tasks, taken={"t0", "t1", "t2"})
    assert [t.id for t in renamed] == ["t3", "t4"]
    assert renamed[1].deps == ["t0", "t3"]  # t0 is the kept task, t1 was the new one
    assert renamed[1].args == {"expression": "{{t0}} - {{t3.year}}"}
    assert renamed[1].goal == "difference of {{t3}} and t0"


def test_a_resolved_query_that_answers_instead_of_restating_is_dropped() -> None:
    from agents.master import usable_resolution

    query = "How do I pretty-print JSON in Python?"
    answer = "To pretty-print JSON in Python, use json.dumps() with the indent parameter."
    assert usable_resolution(answer, query) == query
    assert usable_resolution("", query) == query
    assert usable_resolution("How many days until 2026-12-25?", "How many days until Christmas?") == (
        "How many days until 2026-12-25?"
    )
    assert (
        usable_resolution("When was Marie Curie born?", "When was she born?") == "When was Marie Curie born?"
    )
    assert usable_resolution("What is 2+2? " * 20, "What is 2+2?") == "What is 2+2?"
