"""Decline margins: the executor's log-odds of calling nothing at the token that decides, and their AUC."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from evals.bfcl_data import load_tasks
from evals.bfcl_run import BfclOptions, run_bfcl
from evals.bfcl_score import Scorer
from evals.decline_margin import (
    best_threshold,
    best_threshold_and_score,
    decline_auc,
    decline_margin,
    declines,
    margin_summary,
)
from tests.support.bfcl import FIXTURE_DATA, bfcl_root  # noqa: F401 - a fixture

OPENING = [
    {"token": '{"', "logprob": -0.1, "top_logprobs": []},
    {"token": "tool", "logprob": 0.0, "top_logprobs": []},
]


def deciding(chosen: str, alternatives: dict[str, float]) -> list[dict[str, Any]]:
    """A reply's log-probabilities up to the deciding token ``chosen`` with its ``alternatives``."""
    top = [{"token": token, "logprob": value} for token, value in alternatives.items()]
    return [*OPENING, {"token": chosen, "logprob": alternatives[chosen], "top_logprobs": top}]


def test_the_margin_is_the_log_odds_of_the_declining_tokens_against_the_calling_ones() -> None:
    content = deciding(' [{"', {' [{"': -0.2, " []": -2.0, " [{": -3.0, " [": -4.0, "```": -5.0})
    expected = -2.0 - math.log(math.exp(-0.2) + math.exp(-3.0))  # a bare " [" counts for neither side
    assert decline_margin(content) == pytest.approx(expected, abs=1e-4)
    declined = deciding(" []", {" []": -0.1, ' [{"': -2.5})
    assert decline_margin(declined) == pytest.approx(2.4, abs=1e-4)


def test_a_side_not_listed_is_bounded_by_the_lowest_listed_and_no_list_is_no_margin() -> None:
    content = deciding(' [{"', {' [{"': -0.01, " [": -6.0, "```": -9.0})
    assert decline_margin(content) == pytest.approx(-9.0 + 0.01, abs=1e-4)  # at most this
    assert decline_margin(OPENING) is None
    assert decline_margin(deciding(" [", {" [": -0.1, "```": -3.0})) is None


def test_the_auc_ranks_irrelevance_margins_against_the_rest_with_ties_counted_half() -> None:
    records = [
        {"category": "irrelevance", "decline_margin": 2.0},
        {"category": "irrelevance", "decline_margin": 0.5},
        {"category": "simple_python", "decline_margin": -1.0},
        {"category": "live_relevance", "decline_margin": 0.5},  # wants a call
        {"category": "parallel", "decline_margin": None},  # left out
    ]
    assert decline_auc(records) == 0.875  # (1 + 1 + 1 + 0.5) / 4
    assert decline_auc(records[:2]) is None
    summary = margin_summary(records)
    assert summary is not None and summary["n"] == 4
    assert summary["by_category"]["irrelevance"] == {"n": 2, "leaning_to_decline": 2, "median": 1.25}


class LogprobModel(BaseChatModel):
    """Replies with a scripted JSON text and the log-probabilities of its deciding token."""

    script: list[tuple[str, str, str, dict[str, float]]]
    seen: list[dict[str, Any]] = []

    @property
    def _llm_type(self) -> str:
        return "logprob-fake"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ):
        self.seen.append(kwargs)
        last = str(messages[-1].content)
        text, chosen, alternatives = next((t, c, a) for needle, t, c, a in self.script if needle in last)
        logprobs = {"content": deciding(chosen, alternatives)} if kwargs.get("logprobs") else None
        message = AIMessage(content=text, response_metadata={"logprobs": logprobs})
        return ChatResult(generations=[ChatGeneration(message=message)])


def test_a_schema_run_records_each_margin_and_summarises_them(tmp_path: Path, bfcl_root: Path) -> None:  # noqa: F811
    tasks = load_tasks(FIXTURE_DATA, ("simple_python", "irrelevance"), "all")
    call = json.dumps(
        {"tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}]}
    )
    none = json.dumps({"tool_calls": []})
    model = LogprobModel(
        script=[
            ("triangle", call, ' [{"', {' [{"': -0.1, " []": -3.0}),
            ("Hamlet", none, " []", {" []": -0.2, ' [{"': -1.9}),
            ("x^2", call, ' [{"', {' [{"': -0.5, " []": -1.0}),  # irrelevant, called all the same
            ("", call, ' [{"', {' [{"': -0.05, " []": -4.0}),  # the other tasks that want a call
        ],
        seen=[],
    )
    options = BfclOptions(model="fake", base_url="http://fake", split="all", mode="schema", margins=True)
    options.run_dir = tmp_path / "run"
    summary = asyncio.run(run_bfcl(options, model, tasks, Scorer(bfcl_root)))
    assert all(seen.get("logprobs") is True and seen.get("top_logprobs") for seen in model.seen)
    records = [json.loads(line) for line in (tmp_path / "run" / "bfcl.jsonl").read_text().splitlines()]
    margins = {r["id"]: r["decline_margin"] for r in records}
    assert margins["simple_python_0"] == pytest.approx(-2.9, abs=1e-4)
    assert margins["irrelevance_0"] == pytest.approx(1.7, abs=1e-4)
    assert summary["decline_margins"]["auc"] == 1.0  # both irrelevance margins above every call's
    assert summary["by_category"]["irrelevance"]["correct"] == 1  # margins record, never decide
    assert "AUC irrelevance vs the rest 1.000" in (tmp_path / "run" / "report.md").read_text()

    options.margins = False
    with pytest.raises(ValueError, match="margins"):  # a run resumed without them is another run
        asyncio.run(run_bfcl(options, model, tasks, Scorer(bfcl_root)))


def test_margins_are_read_in_the_schema_mode_only(tmp_path: Path, bfcl_root: Path) -> None:  # noqa: F811
    tasks = load_tasks(FIXTURE_DATA, ("irrelevance",), "all")
    options = BfclOptions(model="fake", base_url="http://fake", split="all", mode="fc", margins=True)
    options.run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match="schema mode only"):
        asyncio.run(run_bfcl(options, LogprobModel(script=[], seen=[]), tasks, Scorer(bfcl_root)))


def test_the_cli_asks_for_the_schema_mode_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    assert main(["eval", "bfcl", "--margins", "--n", "1"]) == 2
    err = capsys.readouterr().err
    assert "--margins reads the deciding token of the schema mode; add --mode schema" in err
    assert "Traceback" not in err


def test_the_best_threshold_is_the_middle_of_the_cut_that_scores_best() -> None:
    records = [
        {"category": "irrelevance", "decline_margin": -1.0, "calls": [{"f": {}}], "correct": False},
        {"category": "irrelevance", "decline_margin": -2.0, "calls": [{"f": {}}], "correct": False},
        {"category": "simple_python", "decline_margin": -5.0, "calls": [{"f": {}}], "correct": True},
        {"category": "simple_python", "decline_margin": -4.0, "calls": [{"f": {}}], "correct": True},
    ]
    assert best_threshold(records) == -3.0  # between the calls' margins and the irrelevant ones'
    assert best_threshold_and_score(records) == (-3.0, 1.0)
    wrong_call = {"category": "simple_python", "decline_margin": -6.0, "calls": [{"f": {}}], "correct": False}
    # irrelevance all declined (1), simple calls all made but one in three wrong (2/3): the mean
    assert best_threshold_and_score([*records, wrong_call]) == (-3.0, round((1 + 2 / 3) / 2, 4))
    assert best_threshold(records[2:]) is None  # nothing to decline
    assert best_threshold_and_score(records[2:]) is None
    assert declines(-2.0, -3.0) and not declines(-3.0, -3.0)


class SecondChanceModel(LogprobModel):
    """Declines (or calls) with a scripted margin; asked with a call required, calls."""

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ):
        if '"minItems": 1' in json.dumps(kwargs.get("response_format")):
            self.seen.append(kwargs)
            call = {
                "tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}]
            }
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=json.dumps(call)))])
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_a_threshold_drops_a_call_above_it_and_asks_a_decline_below_it_for_a_call(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
) -> None:
    tasks = load_tasks(FIXTURE_DATA, ("simple_python", "irrelevance"), "all", n=1)  # triangle, Hamlet
    call = json.dumps(
        {"tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}]}
    )
    model = SecondChanceModel(
        script=[
            ("triangle", call, ' [{"', {' [{"': -0.9, " []": -0.5}),  # margin +0.4: declined
            ("Hamlet", json.dumps({"tool_calls": []}), " []", {" []": -0.7, ' [{"': -0.6}),  # -0.1: called
        ],
        seen=[],
    )
    options = BfclOptions(
        model="fake", base_url="http://fake", split="all", mode="schema", margins=True, decline_threshold=0.0
    )
    options.run_dir = tmp_path / "run"
    summary = asyncio.run(run_bfcl(options, model, tasks, Scorer(bfcl_root)))
    records = {
        r["id"]: r for r in map(json.loads, (tmp_path / "run" / "bfcl.jsonl").read_text().splitlines())
    }
    assert records["simple_python_0"]["decided"] == "declined" and records["simple_python_0"]["calls"] == []
    assert records["irrelevance_0"]["decided"] == "called" and records["irrelevance_0"]["calls"]
    assert records["simple_python_0"]["greedy_correct"] and records["irrelevance_0"]["greedy_correct"]
    assert summary["correct"] == 0 and summary["decline_margins"]["decided"] == {"declined": 1, "called": 1}
    required = [s for s in model.seen if '"minItems": 1' in json.dumps(s.get("response_format"))]
    assert len(required) == 1  # only the decline was asked again
    assert (
        "turned 1 calls into declines and 1 declines into calls"
        in (tmp_path / "run" / "report.md").read_text()
    )


def test_a_threshold_without_margins_is_refused(tmp_path: Path, bfcl_root: Path) -> None:  # noqa: F811
    tasks = load_tasks(FIXTURE_DATA, ("irrelevance",), "all", n=1)
    options = BfclOptions(
        model="fake", base_url="http://fake", split="all", mode="schema", decline_threshold=0.0
    )
    options.run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match="record them too"):
        asyncio.run(run_bfcl(options, LogprobModel(script=[], seen=[]), tasks, Scorer(bfcl_root)))
