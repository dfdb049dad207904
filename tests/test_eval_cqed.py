"""``aisearch eval cqed``: SRSA's judge reply read from real-format and malformed output, the blind
order mapped back to the systems, a resumed run, the summary on a hand-computed case, and the CLI
end to end against the scripted OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.baseline import Baselines
from evals.cqed import CqedOptions, blind_order, run_cqed, scores_by_system
from evals.cqed_judge import OUTPUT_TOKENS, CqedJudge, approx_tokens, build_prompt
from evals.cqed_parse import CRITERIA, parse_rating
from evals.cqed_report import markdown
from evals.cqed_summary import summarise_cqed
from evals.qa_context import QAContext
from prompts import render
from tests.conftest import REPO, Team
from tests.support.fake_openai import fake_openai
from tests.support.fakes import (
    EXEC_SEARCH_JUDGE,
    EXEC_SUBQUERIES,
    MASTER,
    WRITER,
    ScriptedChatModel,
    assessment,
)
from tests.test_cli import cli_env
from tools.hub import ToolHub
from tools.index.search import Searcher
from tools.index.store import IndexStore

JUDGE = "I created a dataset of long situational questions"
RAG_PROMPT = "Using the context, answer the question"  # in full for these open queries
CLOSED_BOOK = "You are a question answering assistant"
QUERIES = [
    {
        "id": "c1",
        "query": "I'm visiting Vell Island next summer. Who built the Harrow Point Lighthouse, "
        "and where was the engineer born? I'd like to see her village too.",
    },
    {
        "id": "c2",
        "query": "We plan to cycle over the Kestrel Bridge with the kids. When did it open, "
        "and which river does it cross? Any tips for a day trip there?",
    },
    {
        "id": "c3",
        "query": "How tall is the Ostrava Tower compared with Lindqvist Tower, and which one "
        "is worth the climb on a $50 budget?",
    },
]
# the worked example's ratings (SRSA's checker notebook), by model
EXAMPLE_SCORES = {
    1: {"informativeness": 5, "completeness": 4, "novelty": 5, "actionability": 3},
    2: {"informativeness": 5, "completeness": 3, "novelty": 5, "actionability": 2},
    3: {"informativeness": 4, "completeness": 1, "novelty": 5, "actionability": 2},
}
EXAMPLE_QUERY = (
    "I'm planning a year-long backpacking trip around the world on a tight budget of $5000. What are "
    "some tips for extremely cheap travel, accommodation, and food options? How can I make my money "
    "last as long as possible while still having meaningful experiences?"
)


def csv_block(rows: dict[int, dict[str, float]], query: str = EXAMPLE_QUERY) -> str:
    """The CSV the judge prompt asks for, in a fenced block, the query quoted."""
    lines = ["query, model, informativeness, completeness, novelty, actionability"]
    for model, scores in rows.items():
        values = ", ".join(str(scores[c]) for c in CRITERIA)
        lines.append(f'"{query}", Model {model}, {values}')
    return "### CSV Output\n```\n" + "\n".join(lines) + "\n```\n"


def example_reply() -> str:
    """A judge reply in SRSA's own format: the worked example (answers repeated, then the ratings)."""
    return render("cqed_judge_example")


# -- reading the judge's reply ---------------------------------------------------------------------


def test_the_worked_examples_ratings_are_read_from_its_csv_and_from_its_prose() -> None:
    with_csv = parse_rating(example_reply() + "\n" + csv_block(EXAMPLE_SCORES) + "Model 1 is the best.\n")
    assert with_csv.complete and with_csv.scores == EXAMPLE_SCORES
    assert with_csv.sources == {1: "csv", 2: "csv", 3: "csv"}

    # the worked example itself ends without a CSV: its prose ratings are the judge's numbers too
    prose_only = parse_rating(example_reply())
    assert prose_only.complete and prose_only.scores == EXAMPLE_SCORES
    assert set(prose_only.sources.values()) == {"prose"}


def test_the_csv_wins_over_the_prose_and_an_unquoted_query_with_commas_still_parses() -> None:
    reply = (
        example_reply()
        + "\nHere is the CSV:\nquery,model,informativeness,completeness,novelty,actionability\n"
        + "I'm planning a trip, on a budget, around the world,Model1,2,2/5,**3**,1\n"
        + "I'm planning a trip, on a budget, around the world,model 2,4.5,3,3,3\n"
        + "I'm planning a trip, on a budget, around the world,3,0,0,0,0\n"
        + "I hope this helps.\n"
    )
    parsed = parse_rating(reply)
    assert parsed.complete
    assert parsed.scores[1] == {"informativeness": 2, "completeness": 2, "novelty": 3, "actionability": 1}
    assert parsed.scores[2]["informativeness"] == 4.5 and parsed.scores[3] == dict.fromkeys(CRITERIA, 0)


def test_a_markdown_table_is_read_like_a_csv() -> None:
    reply = (
        "| query | model | informativeness | completeness | novelty | actionability |\n"
        "|---|---|---|---|---|---|\n"
        '| "Q" | Model 1 | 1 | 2 | 3 | 4 |\n| "Q" | Model 2 | 2 | 2 | 2 | 2 |\n| "Q" | Model 3 | 5 | 5 | 5 | 5 |\n'
    )
    parsed = parse_rating(reply)
    assert parsed.complete and parsed.scores[1] == dict(zip(CRITERIA, (1, 2, 3, 4), strict=True))


def test_malformed_output_is_a_list_of_what_is_missing_never_a_guess() -> None:
    assert parse_rating("I cannot compare these answers.").missing == ["Model 1", "Model 2", "Model 3"]
    # a row missing, a score out of range, a reply cut off mid-row (the output limit)
    reply = (
        "```csv\nquery, model, informativeness, completeness, novelty, actionability\n"
        '"Q", Model 1, 5, 4, 3, 2\n"Q", Model 2, 7, 4, 3, 2\n"Q", Model 3, 4, 3'
    )
    parsed = parse_rating(reply)
    assert not parsed.complete
    assert parsed.scores[1] == dict(zip(CRITERIA, (5, 4, 3, 2), strict=True))
    assert parsed.missing == ["Model 2 informativeness", "Model 3"]
    assert parse_rating('query, model, informativeness\n"Q", Model 9, 1, 2, 3, 4\n').missing[0] == "Model 1"


# -- the judge call ----------------------------------------------------------------------------------


def test_the_worked_example_goes_in_only_when_it_fits_the_judges_context() -> None:
    short = ["Hostels.", "Couchsurfing.", "Work exchange."]
    fits = build_prompt(EXAMPLE_QUERY, short, context_tokens=4096, output_tokens=OUTPUT_TOKENS)
    assert fits.with_example and "The following is an example.\n>>>Query>>>" in fits.system
    assert fits.prompt_tokens + OUTPUT_TOKENS <= 4096

    long = ["tip " * 500] * 3  # 2,000 characters each
    crowded = build_prompt(EXAMPLE_QUERY, long, context_tokens=4096, output_tokens=OUTPUT_TOKENS)
    assert not crowded.with_example and "example" not in crowded.system.split("opinion.")[-1]
    assert crowded.system.rstrip().endswith("in your opinion.\nNow begin:")
    assert "$5000" in crowded.user and crowded.user.count("tip tip") > 100

    small = build_prompt(EXAMPLE_QUERY, long, context_tokens=2048, output_tokens=OUTPUT_TOKENS)
    assert not small.with_example and small.answers_cut
    assert approx_tokens(small.system) + approx_tokens(small.user) + OUTPUT_TOKENS <= 2048


async def test_one_repair_turn_completes_a_rating_and_a_second_failure_is_recorded() -> None:
    judge_model = ScriptedChatModel(name_="judge")
    judge_model.on("Output only the CSV now", csv_block({3: EXAMPLE_SCORES[3]}))
    judge_model.on(
        JUDGE,
        "Model 1:\nInformativeness: 5\nCompleteness: 4\nNovelty: 5\nActionability: 3\n"
        "Model 2:\nInformativeness: 5, Completeness: 3, Novelty: 5, Actionability: 2\nModel 3:",
    )
    rating = await CqedJudge(judge_model).rate(EXAMPLE_QUERY, ["a", "b", "c"])
    assert rating.complete and rating.repaired and rating.scores == EXAMPLE_SCORES
    assert rating.sources == {1: "prose", 2: "prose", 3: "repair"}
    assert len(judge_model.calls) == 2 and "Model 3" in judge_model.calls[1].prompt

    stubborn = ScriptedChatModel(name_="judge").on(JUDGE, "All three answers are fine.")
    rating = await CqedJudge(stubborn).rate(EXAMPLE_QUERY, ["a", "b", "c"])
    assert not rating.complete and rating.repaired and rating.missing == ["Model 1", "Model 2", "Model 3"]
    assert len(stubborn.calls) == 2, "one repair at most"

    broken = ScriptedChatModel(name_="judge")  # no rule: the call raises
    rating = await CqedJudge(broken).rate(EXAMPLE_QUERY, ["a", "b", "c"])
    assert not rating.complete and rating.error and rating.error.startswith("NoRuleMatched")


# -- the blind order ---------------------------------------------------------------------------------


def test_the_blind_order_is_seeded_per_query_and_varies() -> None:
    assert blind_order("c1", 0) == blind_order("c1", 0)
    orders = {tuple(blind_order(f"q{i}", 0)) for i in range(60)}
    assert len(orders) == 6, "every permutation of the three systems appears"
    assert [blind_order(f"q{i}", 0) for i in range(20)] != [blind_order(f"q{i}", 1) for i in range(20)]
    by_position = {1: {"novelty": 1.0}, 2: {"novelty": 2.0}, 3: {"novelty": 3.0}}
    assert scores_by_system(["rag", "closed_book", "aisearch"], by_position) == {
        "rag": {"novelty": 1.0},
        "closed_book": {"novelty": 2.0},
        "aisearch": {"novelty": 3.0},
    }


MARK = {"aisearch": "ANSWER-AISEARCH", "rag": "ANSWER-RAG", "closed_book": "ANSWER-CLOSED"}
GRADE = {"aisearch": 5, "rag": 3, "closed_book": 1}


def grading_judge(prompt: str) -> str:
    """A judge that knows each system's answer by its marker, wherever the blind order put it."""
    answers = prompt.split(">>>Answer from Model 1>>>", 1)[1]
    placed = sorted(MARK, key=lambda name: answers.index(MARK[name]))
    return csv_block({place: dict.fromkeys(CRITERIA, GRADE[name]) for place, name in enumerate(placed, 1)})


def scripted(judge_reply: Any = grading_judge) -> tuple[Team, ScriptedChatModel, ScriptedChatModel]:
    """A team that searches and answers with its marker, a baseline reader, a judge."""
    team = Team()
    team["master"].on(MASTER, assessment("moderate"))
    team["executor"].on(EXEC_SUBQUERIES, {"queries": []})
    team["executor"].on(
        EXEC_SEARCH_JUDGE, {"sources": [1], "answer": "see", "sufficient": True, "next_queries": []}
    )
    team["writer"].on(WRITER, f"Answer: {MARK['aisearch']}\nThe sources say so [1].")
    reader = ScriptedChatModel(name_="reader").on(RAG_PROMPT, f"Answer: {MARK['rag']}")
    reader.on("Question:", MARK["closed_book"])
    return team, reader, ScriptedChatModel(name_="judge").on(JUDGE, judge_reply)


def context(team: Team, reader: ScriptedChatModel, hub: ToolHub, index: Path) -> QAContext:
    """Scripted models over the real docsearch server and index."""
    return QAContext(
        team.resources(hub), Baselines(reader, Searcher(IndexStore(index).require("docs"))), None
    )


def write_queries(path: Path, queries: list[dict[str, Any]] = QUERIES) -> Path:
    path.write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return path


@pytest.mark.slow
async def test_scores_go_back_to_the_right_system_and_a_stopped_run_resumes(
    tmp_path: Path, hotpot_hub: ToolHub, hotpot_index: Path
) -> None:
    data = write_queries(tmp_path / "queries.jsonl")
    options = CqedOptions(data=data, run_dir=tmp_path / "run", seed=3)
    team, reader, judge = scripted()
    summary = await run_cqed(options, context(team, reader, hotpot_hub, hotpot_index), CqedJudge(judge))

    records = [json.loads(line) for line in (tmp_path / "run" / "cqed.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ["c1", "c2", "c3"]
    assert len({tuple(r["order"]) for r in records}) > 1, "the judge does not always see the same order"
    for record in records:
        assert record["scores"] == {name: dict.fromkeys(CRITERIA, GRADE[name]) for name in GRADE}
        assert record["judge"]["complete"] and record["judge"]["with_example"]
        assert record["systems"]["aisearch"]["short"] == MARK["aisearch"]
    assert records[0]["systems"]["rag"]["evidence"], "RAG retrieved from the index"
    assert summary["judged"] == 3 and summary["parse_failure_rate"] == 0.0
    assert summary["aisearch_vs_rag"]["wins"] == 3 and summary["aisearch_vs_rag"]["nwr"] == 1.0
    assert summary["systems"]["aisearch"]["total"]["mean"] == 20.0
    assert summary["systems"]["closed_book"]["criteria"]["novelty"]["mean"] == 1.0
    assert "| aisearch | 3 | 5.00 [5.00, 5.00]" in (tmp_path / "run" / "report.md").read_text()

    # stopped while writing the third record: one record lost, half a line left behind
    lines = (tmp_path / "run" / "cqed.jsonl").read_text().splitlines()
    (tmp_path / "run" / "cqed.jsonl").write_text(lines[0] + "\n" + lines[1][:50])
    team2, reader2, judge2 = scripted()
    summary = await run_cqed(options, context(team2, reader2, hotpot_hub, hotpot_index), CqedJudge(judge2))
    assert len(judge2.calls) == 2 and len(team2["writer"].calls) >= 2
    assert summary["n"] == 3 and summary["judged"] == 3
    assert [
        json.loads(line)["id"]
        for line in (tmp_path / "run" / "cqed.jsonl").read_text().splitlines()
        if line.startswith("{") and line.endswith("}")
    ] == ["c1", "c2", "c3"]

    with pytest.raises(ValueError, match="seed"):
        await run_cqed(
            CqedOptions(data=data, run_dir=tmp_path / "run", seed=4),
            context(team2, reader2, hotpot_hub, hotpot_index),
            CqedJudge(judge2),
        )


# -- the summary -------------------------------------------------------------------------------------


def record(
    rid: str,
    order: list[str],
    scores: dict[str, list[float]],
    latency: float,
    judge: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
) -> dict:
    """A hand-made CQED record: each system's four scores, its latency (RAG and closed-book take
    half of aisearch's), the judge's rating (complete unless ``judge`` says otherwise)."""
    return {
        "id": rid,
        "order": order,
        "systems": {
            name: {
                "latency_s": latency * (1 if name == "aisearch" else 0.5),
                "error": (errors or {}).get(name),
            }
            for name in ("aisearch", "rag", "closed_book")
        },
        "scores": {name: dict(zip(CRITERIA, values, strict=True)) for name, values in scores.items()},
        "judge": judge or {"complete": True, "with_example": True, "seconds": 2.0},
    }


def test_the_summary_on_a_hand_computed_case() -> None:
    records = [
        record(
            "r1",
            ["aisearch", "rag", "closed_book"],
            {"aisearch": [5, 4, 3, 2], "rag": [3, 3, 3, 3], "closed_book": [1, 1, 1, 1]},
            10,
        ),
        record(
            "r2",
            ["rag", "closed_book", "aisearch"],
            {"aisearch": [2, 2, 2, 2], "rag": [4, 4, 4, 4], "closed_book": [0, 0, 0, 0]},
            20,
        ),
        record(
            "r3",
            ["closed_book", "aisearch", "rag"],
            {"aisearch": [3, 3, 3, 3], "rag": [3, 3, 3, 3], "closed_book": [2, 2, 2, 2]},
            30,
        ),
        # the judge could not be read: the query counts as a parse failure and in no score
        record(
            "r4",
            ["aisearch", "rag", "closed_book"],
            {"aisearch": [5, 5, 5, 5]},
            40,
            judge={"complete": False, "repaired": True, "missing": ["Model 2", "Model 3"], "seconds": 4.0},
            errors={"aisearch": "TimeoutError: too slow"},
        ),
    ]
    summary = summarise_cqed(records, {"command": "aisearch eval cqed --data q.jsonl"})

    assert summary["n"] == 4 and summary["judged"] == 3
    assert summary["parse_failures"] == 1 and summary["parse_failure_rate"] == 0.25
    assert summary["repaired"] == 1 and summary["repaired_complete"] == 0 and summary["with_example"] == 3
    aisearch, rag, closed = (summary["systems"][name] for name in ("aisearch", "rag", "closed_book"))
    assert aisearch["criteria"]["informativeness"]["mean"] == pytest.approx(10 / 3, abs=1e-4)
    assert aisearch["total"]["mean"] == pytest.approx(34 / 3, abs=1e-4)
    assert rag["total"]["mean"] == pytest.approx(40 / 3, abs=1e-4) and closed["total"]["mean"] == 4.0
    low, high = aisearch["total"]["ci"]
    assert 8 <= low <= 34 / 3 <= high <= 14
    assert aisearch["latency_p50_s"] == 25.0 and rag["latency_p50_s"] == 12.5
    assert aisearch["errors"] == 1 and rag["errors"] == 0
    duel = summary["aisearch_vs_rag"]
    assert (duel["wins"], duel["ties"], duel["losses"], duel["n"]) == (1, 1, 1, 3)
    assert duel["nwr"] == 0.0 and duel["sign_p"] == 1.0 and duel["total_diff"] == pytest.approx(-2.0)
    bias = summary["order_bias"]
    assert bias["1"]["total"] == pytest.approx(38 / 3, abs=1e-4)
    assert bias["2"]["total"] == 8.0 and bias["3"]["total"] == 8.0 and bias["1"]["n"] == 3
    assert bias["2"]["informativeness"] == pytest.approx(2.0)  # rag 3, closed-book 0, aisearch 3

    report = markdown(summary)
    assert "| 1 | 1 | 1 | 0.000 |" in report
    assert "Parse failures: 1 (0.250)" in report
    assert re.search(r"\| Model 1 \| 3 \| 12\.67 \|", report)


# -- the command -------------------------------------------------------------------------------------


CLI_JUDGE_REPLY = "Model 1 is best.\n" + csv_block(
    {1: dict.fromkeys(CRITERIA, 5), 2: dict.fromkeys(CRITERIA, 3), 3: dict.fromkeys(CRITERIA, 1)}, "q"
)
CLI_RULES = [
    (JUDGE, CLI_JUDGE_REPLY),
    (MASTER, assessment("moderate")),
    (EXEC_SUBQUERIES, {"queries": []}),
    (EXEC_SEARCH_JUDGE, {"sources": [1], "answer": "Dunmore", "sufficient": True, "next_queries": []}),
    ("say why", "The sources say so [1]."),
    (WRITER, "Dunmore"),
    (RAG_PROMPT, "Answer: Dunmore"),
    (CLOSED_BOOK, "I do not know"),
]


@pytest.mark.slow
def test_the_command_runs_two_queries_end_to_end(tmp_path: Path, hotpot_index: Path) -> None:
    data = write_queries(tmp_path / "queries.jsonl")
    run_dir = tmp_path / "results" / "cqed-run"
    with fake_openai(CLI_RULES) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "app.cli",
                "eval",
                "cqed",
                "--data",
                str(data),
                "--n",
                "2",
                "--run",
                str(run_dir),
                "--index-dir",
                str(hotpot_index),
                "--collection",
                "docs",
                "--judge-base-url",
                server.url,
                "--judge-model",
                "fake-judge",
                "--json",
                "-q",
            ],
            env={**cli_env(server.url, tmp_path), "AISEARCH_ROUTING": "llm"},
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=240,
        )
        judge_bodies = [b for b in server.bodies if JUDGE in json.dumps(b)]
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["n"] == 2 and summary["judged"] == 2 and summary["parse_failure_rate"] == 0.0
    assert summary["config"]["index"].endswith(":docs") and summary["config"]["seed"] == 0
    assert len(judge_bodies) == 2 and {b["model"] for b in judge_bodies} == {"fake-judge"}
    records = [json.loads(line) for line in (run_dir / "cqed.jsonl").read_text().splitlines()]
    for rec in records:
        assert rec["scores"][rec["order"][0]] == dict.fromkeys(CRITERIA, 5)
        assert rec["scores"][rec["order"][2]] == dict.fromkeys(CRITERIA, 1)
        assert rec["systems"]["aisearch"]["short"] == "Dunmore" and not rec["systems"]["aisearch"]["error"]
        assert rec["systems"]["rag"]["evidence"][0]["title"], "RAG searched the given index"
        assert rec["systems"]["closed_book"]["prediction"] == "I do not know"
    assert (run_dir / "report.md").read_text().startswith("# CQED")
    assert os.path.exists(run_dir / "summary.json") and (run_dir / "config.json").exists()

    first = (run_dir / "report.md").read_text()
    (run_dir / "report.md").unlink()
    again = subprocess.run(
        [sys.executable, "-m", "app.cli", "eval", "report", str(run_dir)],
        env=cli_env("http://127.0.0.1:9/v1", tmp_path),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    table = [line for line in first.splitlines() if line.startswith("| ")]
    assert again.stdout.startswith("# CQED") and table == [
        line for line in again.stdout.splitlines() if line.startswith("| ")
    ]
    assert (run_dir / "report.md").exists(), "eval report re-renders a CQED run from its records"
