"""Plan grounding: a number in a tool call must come from the question, a result or arithmetic."""

from __future__ import annotations

from agents.plan_grounding import (
    arithmetic_operands,
    misfit_arguments,
    numbers_in,
    numeric_operands,
    uncombined_tasks,
    ungrounded_numbers,
)
from core.plan import Task

QUERY = "How many years after Ulrich Walter was born was Luca Parmitano born?"


def calc(expression: str, task_id: str = "t2") -> Task:
    return Task(id=task_id, goal="Difference", tool="python.calculate", args={"expression": expression})


def test_a_year_typed_into_a_calculation_is_ungrounded() -> None:
    (problem,) = ungrounded_numbers([calc("{{t1}} - 1976")], QUERY)
    assert problem.startswith("task t2: the number(s) 1976 in its args come neither from the question")


def test_referenced_results_digits_and_unit_factors_are_grounded() -> None:
    tasks = [calc("abs({{t1}} - {{t2.year}}) * 12 / 2 + 0.5"), calc("{{t3}} / 365", "t4")]
    assert ungrounded_numbers(tasks, QUERY) == []


def test_numbers_from_the_question_or_an_earlier_result_are_grounded() -> None:
    question = "How old was the bridge, opened in 1,932, in 2001?"
    assert ungrounded_numbers([calc("2001 - 1932")], question) == []
    assert ungrounded_numbers([calc("1954 - 1976")], QUERY, known=["Born 9 February 1954", "1976"]) == []


def test_an_invented_date_in_any_string_argument_is_ungrounded_but_settings_are_not() -> None:
    diff = Task(
        id="t1", goal="Years between", tool="clock.date_diff", args={"start": "1863-11-21", "end": "today"}
    )
    search = Task(
        id="t2", goal="Look up", tool="docsearch.search", args={"query": "Walter astronaut", "k": 10}
    )
    free = Task(id="t3", goal="Recall 1976", tool=None, args={})
    (problem,) = ungrounded_numbers([diff, search, free], QUERY)
    assert "1863, 11, 21" in problem and problem.startswith("task t1")


def test_numbers_glued_to_letters_are_not_numbers() -> None:
    assert numbers_in("utf8 t12 v2.1 -> 07, 1,945.50") == ["7", "1945.5"]


def test_todays_year_is_grounded_only_for_a_question_measured_from_the_present() -> None:
    today = "2026-11-26 (Thursday)"
    age = calc("2026 - {{t1}}")
    assert ungrounded_numbers([age], "How old is Luca Parmitano?", today=today) == []
    (problem,) = ungrounded_numbers([age], QUERY, today=today)
    assert "2026" in problem


DATE = {"type": "string", "pattern": "^(.*[0-9].*|today)$"}
SCHEMAS = {
    "clock.date_diff": {
        "type": "object",
        "properties": {"start": DATE, "end": DATE},
        "required": ["start", "end"],
    },
    "docs.search": {
        "type": "object",
        "properties": {"collection": {"enum": ["hotpotqa"]}, "k": {"type": "integer"}},
    },
}


def test_a_title_written_as_a_date_does_not_fit_the_tools_pattern() -> None:
    diff = Task(
        id="t2",
        goal="Years between",
        tool="clock.date_diff",
        args={"start": "{{t1}}", "end": "Hey Pa! There's a Goat on the Roof"},
    )
    (problem,) = misfit_arguments([diff], SCHEMAS)
    assert problem.startswith("task t2: argument 'end' = \"Hey Pa! There's a Goat on the Roof\" does not fit")


def test_references_types_missing_arguments_and_unknown_tools_are_not_misfits() -> None:
    tasks = [
        Task(id="t1", goal="Diff", tool="clock.date_diff", args={"start": "{{t0}}"}),
        Task(id="t2", goal="Look up", tool="docs.search", args={"k": "5", "collection": "hotpotqa"}),
        Task(id="t3", goal="Other", tool="web.fetch", args={"url": "x"}),
    ]
    assert misfit_arguments(tasks, SCHEMAS) == []
    wrong = Task(id="t4", goal="Look up", tool="docs.search", args={"collection": "musicue"})
    (problem,) = misfit_arguments([wrong], SCHEMAS)
    assert "'collection'" in problem and "is not one of ['hotpotqa']" in problem


def test_a_schema_jsonschema_cannot_read_is_skipped() -> None:
    broken = {"x.y": {"type": "object", "properties": {"a": {"type": 12}}}}
    assert misfit_arguments([Task(id="t1", goal="g", tool="x.y", args={"a": "b"})], broken) == []
    dangling = {"x.y": {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}}
    assert misfit_arguments([Task(id="t1", goal="g", tool="x.y", args={"a": "b"})], dangling) == []


def test_a_plan_for_one_quantity_must_combine_its_lookups() -> None:
    how_many = "How many years after Fred Niblo was born was Peter Duffell born?"
    t1 = Task(id="t1", goal="Fred Niblo's birth year", tool="docs.search", args={"query": "Fred Niblo"})
    t2 = Task(id="t2", goal="Peter Duffell's birth year", tool="docs.search", args={"query": "Duffell"})
    (problem,) = uncombined_tasks([t1, t2], how_many)
    assert "t1, t2 each end the plan" in problem and "{{t1}} and {{t2}}" in problem
    combined = calc("{{t2}} - {{t1}}", "t3").model_copy(update={"deps": ["t1", "t2"]})
    assert uncombined_tasks([t1, t2, combined], how_many) == []
    # other questions, or one lookup, need no computation
    assert uncombined_tasks([t1, t2], "Who was born first, Fred Niblo or Peter Duffell?") == []
    assert (
        uncombined_tasks([t1, t2], "Who is elder, Fred Niblo or Peter Duffell, and by how many years?") == []
    )
    assert uncombined_tasks([t1], "How many films did Fred Niblo direct?") == []


def test_the_operands_of_an_arithmetic_expression_are_found_by_parsing() -> None:
    assert arithmetic_operands("abs({{t1}} - {{t2}})") == ["t1", "t2"]
    assert arithmetic_operands("({{t2}} - {{t1}}) / 365") == ["t2", "t1"]
    assert arithmetic_operands("{{t1}}") == [], "a whole value is passed as it is"
    assert arithmetic_operands("the year {{t1}} and {{t2}}") == [], "text, not an expression"
    assert arithmetic_operands("__import__('os').system({{t1}})") == [], "no arithmetic in it"
    assert arithmetic_operands("{{t1}}.year - {{t2}}") == [], "an attribute is not arithmetic"
    assert arithmetic_operands("7 * 6") == []
    assert arithmetic_operands("{{t1}}" + " + 1" * 5000) == [], "too long to be read as an expression"
    assert arithmetic_operands("(" * 300 + "{{t1}} - 1" + ")" * 300) == [], "nested too deep"


def test_a_lookup_a_calculation_takes_returns_a_number() -> None:
    t1 = Task(id="t1", goal="Date of birth of Fred Niblo", tool="docs.search", args={"query": "Fred Niblo"})
    t2 = Task(
        id="t2", goal="Birth year of Duffell", tool="docs.search", args={"query": "Duffell"}, returns="a year"
    )
    t3 = Task(id="t3", goal="Peter Duffell's films", tool="docs.search", args={"query": "Duffell films"})
    t4 = calc("abs({{t2}} - {{t1}})", "t4").model_copy(update={"deps": ["t1", "t2"]})
    t5 = Task(id="t5", goal="Summarise", tool=None, args={"text": "{{t3}}"}, deps=["t3"])
    done = {task.id: task.returns for task in numeric_operands([t1, t2, t3, t4, t5])}
    assert done == {"t1": "a number", "t2": "a year", "t3": "", "t4": "", "t5": ""}
    passages = t1.model_copy(update={"returns": "passages"})
    assert numeric_operands([passages, t4])[0].returns == "a number"


def test_a_date_a_calculation_takes_is_read_as_its_year() -> None:
    born = Task(id="t1", goal="Birth date of Fred Niblo", tool="docs.search", args={"query": "Fred Niblo"})
    t1, t2 = (
        born.model_copy(update={"id": tid, "returns": returns})
        for tid, returns in (("t1", "a date"), ("t2", "Date"))
    )
    t3 = calc("abs({{t1}} - {{t2}})", "t3").model_copy(update={"deps": ["t1", "t2"]})
    plan = numeric_operands([t1, t2, t3])
    assert [task.returns for task in plan] == ["a year", "a year", ""]
    whole = Task(
        id="t4", goal="Days between", tool="clock.date_diff", args={"start": "{{t1}}", "end": "{{t2}}"}
    )
    assert numeric_operands([t1, t2, whole])[0].returns == "a date", "a date tool takes the date whole"
