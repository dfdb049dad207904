"""The Planner's tool lines: optional arguments in brackets, so a plan writes only what it needs."""

from __future__ import annotations

from typing import Any

from agents.plan_prompt import describe_tools, plan_prompt
from tools.candidates import candidate
from tools.hub import ToolSpec


def spec(name: str, properties: dict[str, Any], required: list[str] | None) -> ToolSpec:
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        parameters["required"] = required
    return ToolSpec(
        name=name, server=name.partition(".")[0], description="Does a thing.", parameters=parameters
    )


SEARCH = spec(
    "docsearch.search",
    {"query": {"type": "string"}, "k": {"type": "integer"}, "collection": {"type": "string"}},
    ["query"],
)


def test_optional_arguments_are_bracketed_after_the_required_ones() -> None:
    shift = spec("clock.shift_date", {"days": {"type": "integer"}, "date": {"type": "string"}}, ["date"])
    lines = describe_tools([candidate(SEARCH, [SEARCH], 0.0), candidate(shift, [shift], 0.0)])

    assert "- docsearch.search(query[, k, collection]): Does a thing." in lines
    assert "- clock.shift_date(date[, days]): Does a thing." in lines


def test_a_schema_that_says_nothing_of_what_it_requires_marks_nothing_optional() -> None:
    silent = spec("web.fetch", {"url": {"type": "string"}, "timeout": {"type": "number"}}, None)
    record = candidate(silent, [silent], 0.0)

    assert "optional" not in record
    assert "- web.fetch(url, timeout):" in describe_tools([record])


def test_a_tool_whose_arguments_are_all_optional_brackets_them_all() -> None:
    now = spec("clock.now", {"timezone": {"type": "string"}}, [])

    assert "- clock.now([timezone]):" in describe_tools([candidate(now, [now], 0.0)])


def test_the_plan_prompt_says_what_brackets_mean() -> None:
    prompt = plan_prompt(
        today="Sunday",
        max_tasks=4,
        strategy="parallel",
        candidates=[candidate(SEARCH, [SEARCH], 0.0)],
        query="Which is older, A or B?",
    )

    assert "docsearch.search(query[, k, collection])" in prompt
    assert "[bracketed] arguments are optional" in prompt
