"""``aisearch eval qa``: the runner on a 5-question fixture with scripted models, a real index and a
real docsearch MCP server; resume after a crash, the baseline's single retrieval and model call,
LangSmith offline with sockets blocked, the trajectory evaluator, the short answer."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from app.cli import print_answer
from app.render import ProgressPrinter
from evals.baseline import Baselines
from evals.judge import Judge
from evals.qa_context import QAContext
from evals.qa_evaluators import route_check
from evals.qa_runner import QAOptions, run_qa
from evals.run_dirs import code_version
from tests.conftest import REPO, Team
from tests.support.fakes import (
    EXEC_SEARCH_JUDGE,
    EXEC_SUBQUERIES,
    MASTER,
    WRITER,
    ScriptedChatModel,
    assessment,
)
from tools.hub import ToolHub
from tools.index.search import Searcher
from tools.index.store import IndexStore

FIXTURE = REPO / "tests" / "fixtures" / "hotpot"
ANSWERS = {
    "Harrow Point": "Dunmore",
    "Ostrava Tower or Lindqvist": "Ostrava Tower",
    "Kestrel Bridge cross": "Ome",
    "Vell Island": "2,300",
    "Kestrel Bridge open": "1932",
}
RAG_PROMPT = "Using the context, answer the question with a short phrase only"


def gold_for(prompt: str) -> str:
    """The fixture answer for the fixture question the prompt asks (its last "Question:" line)."""
    prompt = prompt.rsplit("Question:", 1)[-1]
    return next((answer for key, answer in ANSWERS.items() if key in prompt), "the height")


class CountingSearcher(Searcher):
    """The real searcher, counting its ranking calls."""

    calls: int = 0

    def rank(self, query: str, n: int, ranker: str = "hybrid", rerank: bool = False) -> Any:
        """Rank as usual and count the call."""
        CountingSearcher.calls += 1
        return super().rank(query, n, ranker, rerank)


def scripted_team() -> tuple[Team, ScriptedChatModel, ScriptedChatModel]:
    """A team that searches every question and answers from the fixture, a baseline model, a judge."""
    team = Team()
    team["master"].on(MASTER, assessment("moderate"))
    team["executor"].on(EXEC_SUBQUERIES, {"queries": []})
    team["executor"].on(
        EXEC_SEARCH_JUDGE,
        lambda p: {"sources": [1], "answer": gold_for(p), "sufficient": True, "next_queries": []},
    )
    team["writer"].on(WRITER, lambda p: f"Answer: {gold_for(p)}\nThe sources say {gold_for(p)} [1].")
    reader = ScriptedChatModel(name_="rag-reader").on(RAG_PROMPT, lambda p: "Answer: " + gold_for(p))
    reader.on("Question:", "I do not know")
    judge = ScriptedChatModel(name_="judge")
    judge.on("You grade answers", {"verdict": "correct"})
    judge.on("You check whether an answer is supported", {"verdict": "faithful"})
    judge.on("You compare two answers", {"better": "tie"})
    return team, reader, judge


def options(run_dir: Path, **overrides: Any) -> QAOptions:
    """Five fixture questions, aisearch and RAG, judged."""
    values: dict[str, Any] = {
        "data": FIXTURE / "dev.jsonl",
        "run_dir": run_dir,
        "systems": ("aisearch", "rag"),
    }
    return QAOptions(**{**values, **overrides})


def context(
    team: Team, reader: ScriptedChatModel, judge: ScriptedChatModel, hub: ToolHub, index: Path
) -> QAContext:
    """Scripted models over the real hub and index."""
    searcher = CountingSearcher(IndexStore(index).require("docs"))
    return QAContext(team.resources(hub), Baselines(reader, searcher), Judge(judge, constrain=False))


def block_sockets(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Make every outgoing connection of this process fail, and record the attempts."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError(f"network blocked in this test: {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", lambda address, *a, **k: refuse(None, address))  # type: ignore[arg-type]
    return attempts


@pytest.mark.slow
async def test_runner_scores_both_systems_offline_and_resumes_after_a_crash(
    tmp_path: Path, hotpot_hub: ToolHub, hotpot_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    team, reader, judge = scripted_team()
    run_dir = tmp_path / "run"
    attempts = block_sockets(monkeypatch)
    CountingSearcher.calls = 0

    summary = await run_qa(options(run_dir), context(team, reader, judge, hotpot_hub, hotpot_index))

    assert attempts == [], "the offline LangSmith path opened no socket"
    assert summary["n"] == 5 and summary["errors"] == 0
    assert summary["em"] == 1.0 and summary["baseline_em"] == 1.0 and summary["nwr"] == 0.0
    assert summary["route_counts"] == {"executor": 5}, "the comparison is searched in parallel, not planned"
    assert summary["trajectory_checks"] == {"checked": 5, "unexpected": 0, "examples": []}
    feedback = summary["langsmith"]["feedback_means_this_session"]
    assert feedback["aisearch.em"] == 1.0 and feedback["trajectory.expected_route"] == 1.0
    # the baseline: exactly one retrieval and one model call per question
    assert CountingSearcher.calls == 5
    assert len([c for c in reader.calls if RAG_PROMPT in c.prompt]) == 5 and len(reader.calls) == 5
    records = [json.loads(line) for line in (run_dir / "questions.jsonl").read_text().splitlines()]
    first = records[0]
    assert first["systems"]["aisearch"]["short"] == "Dunmore"
    assert first["systems"]["aisearch"]["trajectory"][:2] == ["master", "select_tools"]
    assert first["systems"]["aisearch"]["node_seconds"]["writer"] >= 0
    assert first["systems"]["aisearch"]["plans"] == [
        {"version": 1, "mode": "single", "fallback": False, "errors": []}
    ], "each plan version, and why a plan was repaired or fell back"
    tasks = first["systems"]["aisearch"]["tasks"]
    assert tasks and all(t["tool"] and t["calls"][0].get("query") for t in tasks), (
        "what each task was called with"
    )
    assert first["systems"]["rag"]["evidence"][0]["title"] in {"Harrow Point Lighthouse", "Miriam Calloway"}
    assert first["judge"]["pairwise"] == {"aisearch_vs_rag": "tie"}
    assert (run_dir / "report.md").exists() and (run_dir / "summary.json").exists()
    (first_sitting,) = json.loads((run_dir / "config.json").read_text())["sittings"]
    assert first_sitting["commit"] == code_version()["commit"] and first_sitting["started"], (
        "the run names the code it measured"
    )

    # a crash while writing the fourth record: two records lost, half a line left behind
    lines = (run_dir / "questions.jsonl").read_text().splitlines()
    (run_dir / "questions.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])
    team2, reader2, judge2 = scripted_team()
    summary = await run_qa(options(run_dir), context(team2, reader2, judge2, hotpot_hub, hotpot_index))

    assert len(reader2.calls) == 2, "only the two unfinished questions ran again"
    assert len(json.loads((run_dir / "config.json").read_text())["sittings"]) == 2, "each sitting's code"
    assert summary["n"] == 5 and summary["em"] == 1.0


@pytest.mark.slow
async def test_a_failing_system_is_recorded_as_an_error_not_raised(
    tmp_path: Path, hotpot_hub: ToolHub, hotpot_index: Path
) -> None:
    team, reader, judge = scripted_team()
    team["writer"].rules.clear()  # the Writer's prompt now matches no rule: the graph run raises
    summary = await run_qa(
        options(tmp_path / "run", n=2, judge=False), context(team, reader, judge, hotpot_hub, hotpot_index)
    )
    assert summary["errors_by_system"]["aisearch"] == 2 and summary["em"] == 0.0
    assert summary["baseline_em"] == 1.0 and judge.calls == [], "judge=False asks no judge"
    record = json.loads((tmp_path / "run" / "questions.jsonl").read_text().splitlines()[0])
    assert record["systems"]["aisearch"]["error"].startswith("NoRuleMatched")


def test_trajectory_evaluator_flags_an_unexpected_route() -> None:
    searched = {
        "systems": {"aisearch": {"trajectory": ["master", "select_tools", "dispatch", "execute_task"]}}
    }
    unsearched = {"systems": {"aisearch": {"trajectory": ["master", "writer"]}}}
    hotpot = {"supporting_titles": ["A", "B"]}
    assert route_check(searched, hotpot)["score"] == 1
    flagged = route_check(unsearched, hotpot)
    assert flagged["score"] == 0 and "writer_only" in flagged["comment"]
    assert route_check(searched, {"expected_route": ["planner"]})["score"] == 0
    planned = {"systems": {"aisearch": {"trajectory": ["master", "select_tools", "plan", "dispatch"]}}}
    assert route_check(planned, {"expected_route": ["planner"]})["score"] == 1


def test_cli_shows_the_short_answer_first() -> None:
    console = Console(record=True, width=100)
    answer = {
        "short": "Dunmore",
        "text": "Miriam Calloway, who built the lighthouse, was born in Dunmore [1].",
        "citations": [{"n": 1}],
        "sources": [{"n": 1, "title": "Miriam Calloway", "source": "corpus.jsonl", "kind": "document"}],
        "basis": "sources",
        "missing": [],
    }
    print_answer(console, answer, streamed=False)
    lines = [line for line in console.export_text().splitlines() if line.strip()]
    assert lines[:2] == ["answer", "Dunmore"]
    assert re.search(r"born in Dunmore \[1\]", lines[2])


def test_the_cli_prints_quotes_the_model_wrote_as_character_references() -> None:
    console = Console(record=True, width=200)
    printer = ProgressPrinter(console)
    # qwen2.5-coder-1.5b's reply in the README's example, in the pieces a tokenizer streams
    for token in [
        "395",
        "\n",
        "[1] calculate({",
        "&#",
        "34",
        ";expression",
        "&#34;",
        ": 1}) for AT&",
        "T &",
        "copy",
    ]:
        printer.token(token, "m")
    printer.finish()
    assert console.export_text().splitlines()[1:] == [
        "395",
        '[1] calculate({"expression": 1}) for AT&T &copy',
    ]


@pytest.mark.slow
async def test_a_run_without_judge_is_judged_afterwards_resumably_and_its_summary_rewritten(
    tmp_path: Path, hotpot_hub: ToolHub, hotpot_index: Path
) -> None:
    from evals.rejudge import judge_run

    team, reader, judge = scripted_team()
    run_dir = tmp_path / "run"
    await run_qa(options(run_dir, n=3, judge=False), context(team, reader, judge, hotpot_hub, hotpot_index))
    records_before = (run_dir / "questions.jsonl").read_text()
    assert "judge_agreement" not in json.loads((run_dir / "summary.json").read_text())

    first = await judge_run(run_dir, Judge(judge, constrain=False), n=2)
    assert (
        first["judged_later"]["now"] == 2 and len(judge.calls) == 2 * 5
    )  # 2 systems x 2 verdicts + pairwise
    rest = await judge_run(run_dir, Judge(judge, constrain=False))
    assert rest["judged_later"] == {**rest["judged_later"], "now": 1, "total": 3}
    assert await judge_run(run_dir, Judge(judge, constrain=False)) and len(judge.calls) == 3 * 5, "all judged"

    assert (run_dir / "questions.jsonl").read_text() == records_before, "the run's records stay as written"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["judge_agreement"] == {"aisearch": 1.0, "rag": 1.0}
    assert summary["judge_ties"] == 3 and "trajectory_checks" in summary
    assert summary["config"]["date"] and summary["config"]["machine"], "the live run's config is kept"
    assert "judge" in (run_dir / "report.md").read_text().lower()
