"""Small-model safeguards: the Master's complexity calibration and the Planner's id renumbering."""

from __future__ import annotations

from agents.assessment import FACT_CHARS, MAX_FACTS, RATIONALE_CHARS, AssessmentReply, calibrate
from agents.planner import _renumber
from core.plan import Task
from models.structured import schema_response_format


def reply(complexity: str, facts: list[str], external: bool = True) -> AssessmentReply:
    return AssessmentReply(
        rationale="r",
        resolved_query="q",
        facts_to_find=facts,
        complexity=complexity,
        needs_external_info=external,
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
    from agents.assessment import usable_resolution

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


def test_the_master_writes_only_bounded_fields_and_its_intent_is_the_facts_it_lists() -> None:
    schema = schema_response_format(AssessmentReply)["schema"]
    fields = schema["properties"]
    assert list(fields) == [
        "rationale",
        "resolved_query",
        "facts_to_find",
        "complexity",
        "needs_external_info",
        "strategy",
    ], "the rationale first; no free-text intent to wait for"
    assert schema["required"] == list(fields)
    assert fields["rationale"]["maxLength"] == RATIONALE_CHARS
    assert fields["facts_to_find"]["maxItems"] == MAX_FACTS
    assert fields["facts_to_find"]["items"]["maxLength"] == FACT_CHARS

    reading = calibrate(reply("moderate", [" current time in Tokyo ", ""]), "What time is it in Tokyo now?")
    assert reading.intent == "current time in Tokyo"
    complex_reading = calibrate(reply("complex", ["a", "b"]), "Who is older, A or B?")
    assert complex_reading.needs_decomposition and not reading.needs_decomposition


def test_a_long_rationale_from_an_unconstrained_endpoint_is_still_read() -> None:
    long = AssessmentReply(rationale="x" * (3 * RATIONALE_CHARS), complexity="simple")
    assert len(long.rationale) == 3 * RATIONALE_CHARS, "the bound is for decoding, not for validation"


def test_a_rationale_cut_at_its_bound_is_shown_cut() -> None:
    cut = "The Book of Healing is a well-known text. " + "x" * (RATIONALE_CHARS - 46) + " the Arabic"
    shown = calibrate(
        reply("simple", []).model_copy(update={"rationale": cut[:RATIONALE_CHARS]}), "q"
    ).rationale
    assert shown.endswith("…") and len(shown) <= RATIONALE_CHARS + 1
    assert calibrate(reply("simple", []), "q").rationale == "r", "a short one is shown as written"
