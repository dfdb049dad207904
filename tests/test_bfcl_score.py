"""Reading calls from a reply (tool_calls or text) and scoring them with BFCL's own checker."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from evals.bfcl_calls import read_calls
from evals.bfcl_data import BfclTask, load_category
from evals.bfcl_fetch import BfclDataError
from evals.bfcl_schema import ToolSet
from evals.bfcl_score import Scorer, load_checker
from tests.support.bfcl import FIXTURE_DATA, bfcl_root  # noqa: F401 - a fixture

SIMPLE = load_category(FIXTURE_DATA, "simple_python")
AREA = SIMPLE[0]  # geometry.triangle_area(base=10, height=5)
MULTIPLE = load_category(FIXTURE_DATA, "multiple")[0]  # get_weather(city="Oslo")
PARALLEL = load_category(FIXTURE_DATA, "parallel")[0]  # get_weather for Rome and Madrid
IRRELEVANT = load_category(FIXTURE_DATA, "irrelevance")[0]
RIGHT = [{"geometry.triangle_area": {"base": 10, "height": 5}}]


def text_calls(text: str, task: BfclTask = AREA) -> list[dict]:
    read = read_calls(AIMessage(content=text), ToolSet(task.functions))
    assert read.source == ("text" if read.calls else "none")
    return read.calls


# -- reading calls ---------------------------------------------------------------------------------


def test_tool_calls_come_first_with_bfcl_names() -> None:
    message = AIMessage(
        content="ignored",
        tool_calls=[{"name": "geometry_triangle_area", "args": {"base": 10, "height": 5}, "id": "c1"}],
    )
    read = read_calls(message, ToolSet(AREA.functions))
    assert (read.source, read.calls) == ("tool_calls", RIGHT)


def test_unreadable_tool_call_arguments_are_a_call_with_a_problem() -> None:
    message = AIMessage(
        content="", invalid_tool_calls=[{"name": "get_weather", "args": "{city:", "id": "c", "error": "bad"}]
    )
    read = read_calls(message, ToolSet(MULTIPLE.functions))
    assert read.calls == [{"get_weather": {}}] and "unreadable" in read.problems[0]


@pytest.mark.parametrize(
    "text",
    [
        "[geometry.triangle_area(base=10, height=5)]",
        "geometry.triangle_area(base=10, height=5)",
        "```python\n[geometry.triangle_area(base=10, height=5)]\n```",
        '<tool_call>\n{"name": "geometry_triangle_area", "arguments": {"base": 10, "height": 5}}\n</tool_call>',
        '{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}',
        '{"name": "geometry.triangle_area", "arguments": "{\\"base\\": 10, \\"height\\": 5}"}',
        '```json\n[{"function": "geometry.triangle_area", "parameters": {"base": 10, "height": 5}}]\n```',
        '{"geometry.triangle_area": {"base": 10, "height": 5}}',
        'functions.geometry_triangle_area:\n{"base": 10, "height": 5}',
        "Sure! I will call geometry.triangle_area(base=10, height=5) to get the area.",
    ],
)
def test_calls_written_as_text_are_read(text: str) -> None:
    assert text_calls(text) == RIGHT


def test_several_written_calls_and_non_literal_values() -> None:
    text = '[get_weather(city="Rome"), get_weather(city="Madrid", days=n)]'
    assert text_calls(text, PARALLEL) == [
        {"get_weather": {"city": "Rome"}},
        {"get_weather": {"city": "Madrid", "days": "n"}},
    ]
    tagged = "<tool_call>" + '{"name": "get_weather", "arguments": {"city": "Rome"}}' + "</tool_call>\n"
    tagged += '<tool_call>{"name": "get_weather", "arguments": {"city": "Madrid"}}</tool_call>'
    assert len(text_calls(tagged, PARALLEL)) == 2


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I cannot help with that: none of the functions fits.",
        "Hamlet was written by William Shakespeare (around 1600).",
        '{"author": "Shakespeare", "name": "Hamlet"}',
    ],
)
def test_prose_is_no_call(text: str) -> None:
    assert text_calls(text, IRRELEVANT) == []


# -- scoring ---------------------------------------------------------------------------------------


def test_irrelevance_is_right_only_without_a_call() -> None:
    scorer = Scorer(None)  # needs no checker
    assert scorer.score(IRRELEVANT, []).correct
    wrong = scorer.score(IRRELEVANT, RIGHT)
    assert not wrong.correct and wrong.error_type == "irrelevance_error:called"


def test_no_call_on_a_call_task_is_wrong_without_the_checker() -> None:
    verdict = Scorer(None).score(AREA, [])
    assert not verdict.correct and verdict.error_type == "ast_decoder:no_call"
    with pytest.raises(BfclDataError, match="checker"):
        Scorer(None).score(AREA, RIGHT)


def test_the_checker_loads_without_bfcl_installed(bfcl_root: Path) -> None:  # noqa: F811
    checker = load_checker(bfcl_root)
    assert callable(checker.ast_checker)
    assert not [name for name in sys.modules if name.startswith("bfcl_eval")], "no stand-in stays imported"


def test_bfcl_checker_marks_right_and_wrong_calls(bfcl_root: Path) -> None:  # noqa: F811
    scorer = Scorer(bfcl_root)
    assert scorer.score(AREA, RIGHT).correct
    assert scorer.score(
        AREA, [{"geometry.triangle_area": {"base": 10, "height": 5, "unit": "units"}}]
    ).correct
    wrong_value = scorer.score(AREA, [{"geometry.triangle_area": {"base": 11, "height": 5}}])
    assert not wrong_value.correct and wrong_value.error_type == "value_error:others"
    wrong_type = scorer.score(AREA, [{"geometry.triangle_area": {"base": "10", "height": 5}}])
    assert not wrong_type.correct
    missing = scorer.score(AREA, [{"geometry.triangle_area": {"base": 10}}])
    assert not missing.correct and "missing_required" in str(missing.error_type)
    wrong_function = scorer.score(MULTIPLE, [{"geometry.triangle_area": {"base": 10, "height": 5}}])
    assert not wrong_function.correct and "wrong_func_name" in str(wrong_function.error_type)
    extra = scorer.score(AREA, [*RIGHT, *RIGHT])
    assert not extra.correct and "wrong_count" in str(extra.error_type)


def test_bfcl_checker_on_floats_multiple_and_parallel(bfcl_root: Path) -> None:  # noqa: F811
    scorer = Scorer(bfcl_root)
    convert = SIMPLE[2]
    assert scorer.score(
        convert, [{"convert_currency": {"amount": 100, "source": "USD", "target": "EUR"}}]
    ).correct
    assert scorer.score(MULTIPLE, [{"get_weather": {"city": "oslo"}}]).correct  # BFCL: strings ignore case
    both = [{"get_weather": {"city": "Madrid"}}, {"get_weather": {"city": "Rome", "days": 1}}]
    assert scorer.score(PARALLEL, both).correct, "parallel calls in any order"
    assert not scorer.score(PARALLEL, both[:1]).correct
    assert not scorer.score(PARALLEL, [*both, both[0]]).correct
