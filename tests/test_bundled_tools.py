"""The bundled-tool task set: its functions are the live servers' own, its possible answers fit them,
mean one thing to the live tools, and BFCL's checker takes every one of them."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from evals.bfcl_data import BfclTask, available_categories, load_tasks
from evals.bfcl_schema import to_tool
from evals.bfcl_score import Scorer
from evals.bundled_tools import (
    SERVERS,
    SET_DIR,
    answer_problems,
    build_set,
    live_hub,
    read_source,
    server_functions,
    set_files,
    stale_files,
)
from tests.support.bfcl import bfcl_root  # noqa: F401 - a fixture
from tools.hub import ToolHub

TASKS = load_tasks(SET_DIR, tuple(available_categories(SET_DIR)))
ANSWERED = [task for task in TASKS if task.answer is not None]
REWRITE = "the set is stale: rewrite it with `python -m evals.bundled_tools --write`"


def _server(task: BfclTask) -> str:
    return str(task.functions[0]["name"]).partition(".")[0]


def variants(answer: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The call of the first acceptable values, then each other acceptable value in turn (``""``:
    the argument left out), the rest kept at their first."""
    (name, arguments), = answer.items()  # fmt: skip
    first = {param: values[0] for param, values in arguments.items() if values[0] != ""}
    yield name, first
    for param, values in arguments.items():
        for value in values[1:]:
            call = {k: v for k, v in first.items() if k != param}
            yield name, call if value == "" else {**call, param: value}


def test_the_set_is_small_hand_written_and_covers_every_server() -> None:
    assert Counter(task.category for task in TASKS) == {
        "bundled_multiple_python": 19,
        "bundled_multiple_clock": 18,
        "bundled_multiple_docsearch": 10,
        "bundled_irrelevance": 12,
    }
    assert {_server(task) for task in TASKS if task.category == "bundled_irrelevance"} == set(SERVERS)
    for task in TASKS:  # the server's every tool is offered: the model picks one
        assert len(task.functions) >= 3 and {_server(task)} == {
            f["name"].partition(".")[0] for f in task.functions
        }
    called = {next(iter(task.answer[0])) for task in ANSWERED if task.answer}
    assert called == {f["name"] for task in TASKS for f in task.functions}, (
        "every tool is the answer somewhere"
    )


def test_the_files_are_what_the_source_makes_and_every_answer_fits_its_functions() -> None:
    functions = {_server(task): task.functions for task in TASKS}
    assert stale_files(set_files(build_set(read_source(), functions))) == [], REWRITE
    for task in ANSWERED:
        assert task.answer is not None and answer_problems(task.functions, task.answer[0]) == [], task.id


def test_a_possible_answer_that_does_not_fit_is_named() -> None:
    functions = next(task.functions for task in TASKS if _server(task) == "clock")
    problems = answer_problems(
        functions,
        {"clock.shift_date": {"date": ["2026-11-22", ""], "days": ["30"], "weeks": [0, ""], "hours": [1]}},
    )
    assert problems == [
        "clock.shift_date: no answer for 'months'",
        "clock.shift_date: no answer for 'years'",
        "clock.shift_date.date: required, so it may not be left out",
        "clock.shift_date.days='30': '30' is not of type 'integer'",
        "clock.shift_date: no parameter 'hours'",
    ]
    assert answer_problems(functions, {"python.calculate": {"expression": ["1"]}}) == [
        "python.calculate is not one of the offered functions"
    ]


def test_bfcls_checker_takes_every_acceptable_value_and_refuses_other_calls(bfcl_root: Path) -> None:  # noqa: F811
    scorer = Scorer(bfcl_root)
    for task in ANSWERED:
        assert task.answer is not None
        for name, arguments in variants(task.answer[0]):
            verdict = scorer.score(task, [{name: arguments}])
            assert verdict.correct, f"{task.id}: {name}({arguments}): {verdict.error}"
        name, arguments = next(variants(task.answer[0]))
        other = next(f["name"] for f in task.functions if f["name"] != name)
        assert not scorer.score(task, [{other: arguments}]).correct, "another tool of the server is wrong"
        assert not scorer.score(task, []).correct
    for task in TASKS:
        if task.answer is None:
            assert scorer.score(task, []).correct
            assert not scorer.score(task, [{task.functions[0]["name"]: {}}]).correct


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hub(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ToolHub]:
    """The bundled servers as the set is made from them, the clock pinned, no refined documents."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AISEARCH_CLOCK_NOW", "2026-11-24T10:00:00")
        patch.setenv("AISEARCH_TOOLS_DIR", str(tmp_path_factory.mktemp("tools")))
        async with live_hub() as opened:
            yield opened


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_every_function_is_the_live_servers_own(hub: ToolHub) -> None:
    assert stale_files(set_files(build_set(read_source(), server_functions(hub)))) == [], REWRITE
    for task in TASKS:
        for function in task.functions:
            spec = hub.specs[function["name"]]
            assert function["description"] == spec.description
            assert to_tool(function)["function"]["parameters"] == spec.parameters, (
                "the model sees the live schema"
            )


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_every_acceptable_value_means_the_same_to_the_live_tool(hub: ToolHub) -> None:
    checked = 0
    for task in ANSWERED:
        if _server(task) == "docsearch":  # over an empty index: nothing to compare
            continue
        assert task.answer is not None
        outputs = set()
        for name, arguments in variants(task.answer[0]):
            outcome = await hub.call(name, arguments, timeout_s=30)
            assert outcome.ok, f"{task.id}: {name}({arguments}): {outcome.error}"
            outputs.add(outcome.output)
            checked += 1
        assert len(outputs) == 1, f"{task.id}: the acceptable values give {outputs}"
    assert checked > 100
