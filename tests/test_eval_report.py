"""Summary aggregation, JSONL loading, the Markdown report, plots and run comparison.

The four records below are hand-made so every aggregate can be computed by hand (see the comments).
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path

import pytest

from evals.record_metrics import record_metrics
from evals.report import markdown, write_report
from evals.report_plots import plots
from evals.run_compare import compare
from evals.run_records import load_records
from evals.summary import summarise

ARTHUR = "Arthur's Magazine was an American literary periodical started in 1844."
EIFFEL = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
CONFIG = {"command": "aisearch eval qa --limit 4", "machine": "2 cores", "date": "2026-11-30"}


def _records() -> list[dict]:
    q1 = {  # comparison; aisearch right (EM 1), rag wrong: F1 win
        "id": "q1",
        "question": "Which magazine was started first, Arthur's Magazine or First for Women?",
        "gold": "Arthur's Magazine",
        "type": "comparison",
        "supporting_titles": ["Arthur's Magazine", "First for Women"],
        "systems": {
            "aisearch": {
                "prediction": "Arthur's Magazine was started first [1].",
                "short": "Arthur's Magazine",
                "citations": [{"n": 1, "evidence_id": "e1", "title": "Arthur's Magazine", "source": "x"}],
                "evidence": [
                    {"id": "e1", "title": "Arthur's Magazine", "content": ARTHUR, "kind": "document"},
                    {
                        "id": "e2",
                        "title": "First for Women",
                        "content": "A magazine from 1989.",
                        "kind": "document",
                    },
                ],
                # content words arthur, magazine, started, first: 3 of 4 in e1 -> supported
                "sentences": [{"text": "Arthur's Magazine was started first.", "cited": [1]}],
                "route": "executor",
                "compared": {"form": "earlier", "facts": {"A": "1844", "B": "1989"}, "settled": "A"},
                "replans": 0,
                "node_seconds": {"master": 2.0, "writer": 4.0},
                "tokens": {
                    "master": {"prompt": 600, "completion": 40},
                    "writer": {"prompt": 800, "completion": 60},
                },
                "latency_s": 10.0,
                "error": None,
            },
            "rag": {
                "prediction": "First for Women",
                "short": "First for Women",
                "citations": [],
                "evidence": [{"id": "r1", "title": "First for Women", "content": "...", "kind": "document"}],
                "sentences": [],
                "route": "rag",
                "node_seconds": {"retrieve": 0.1, "read": 4.9},
                "tokens": {"writer": {"prompt": 700, "completion": 5}},
                "latency_s": 5.0,
                "error": None,
            },
            "closed_book": {
                "prediction": "Arthur's Magazine",
                "short": "Arthur's Magazine",
                "latency_s": 2.0,
            },
        },
        "judge": {
            "aisearch": {"correctness": 2, "faithfulness": 2},
            "rag": {"correctness": 2, "faithfulness": 1},  # the judge disagrees with EM here
            "pairwise": {"aisearch_vs_rag": "win"},
        },
    }
    q2 = {  # bridge; aisearch partial (F1 0.5), rag right: F1 lose; planner route with one re-plan
        "id": "q2",
        "question": "In which city is the Eiffel Tower?",
        "gold": "Paris",
        "type": "bridge",
        "supporting_titles": ["Eiffel Tower", "Paris"],
        "systems": {
            "aisearch": {
                "prediction": "It is in the city of Paris [1].",
                "short": "the city of Paris",
                "citations": [{"n": 1, "evidence_id": "e1", "title": "Eiffel Tower"}],
                "evidence": [{"id": "e1", "title": "Eiffel Tower", "content": EIFFEL, "kind": "document"}],
                "sentences": [
                    {"text": "The Eiffel Tower stands in Paris.", "cited": [1]},  # 3/4: supported
                    {"text": "Tourists love lovely sunny beaches everywhere.", "cited": [1]},  # 0/6
                    {"text": "Truly.", "cited": []},  # not a factual sentence
                ],
                "route": "planner",
                "replans": 1,
                "node_seconds": {"master": 1.0, "planner": 3.0, "writer": 6.0},
                "tokens": {
                    "master": {"prompt": 500, "completion": 30},
                    "planner": {"prompt": 1000, "completion": 100},
                    "writer": {"prompt": 900, "completion": 80},
                },
                "latency_s": 30.0,
                "error": None,
            },
            "rag": {
                "prediction": "Paris",
                "short": "Paris",
                "evidence": [{"id": "r1", "title": "Paris"}, {"id": "r2", "title": "Eiffel Tower"}],
                "route": "rag",
                "tokens": {"writer": {"prompt": 720, "completion": 3}},
                "latency_s": 7.0,
                "error": None,
            },
        },
        "judge": {
            "aisearch": {"correctness": 1, "faithfulness": 2},
            "rag": {"correctness": 2, "faithfulness": 2},
            "pairwise": {"aisearch_vs_rag": "lose"},
        },
    }
    q3 = {  # bridge; yes/no gold, aisearch says no (F1 0 by the yes/no rule), rag errored: tie
        "id": "q3",
        "question": "Are A and B both films?",
        "gold": "yes",
        "type": "bridge",
        "supporting_titles": ["A", "B"],
        "systems": {
            "aisearch": {
                "prediction": "No, they are not.",
                "short": "no",
                "citations": [],
                "evidence": [],
                "sentences": [{"text": "No, they are not.", "cited": []}],
                "route": "executor",
                "replans": 0,
                "node_seconds": {"master": 2.0, "writer": 2.0},
                "tokens": {
                    "master": {"prompt": 600, "completion": 20},
                    "writer": {"prompt": 600, "completion": 20},
                },
                "latency_s": 20.0,
                "error": None,
            },
            "rag": {"prediction": "", "short": "yes", "evidence": [], "latency_s": 60.0, "error": "timeout"},
        },
        "judge": {
            "aisearch": {"correctness": None, "faithfulness": None},
            "pairwise": {"aisearch_vs_rag": None},
        },
    }
    q4 = {  # comparison; aisearch errored, rag right: F1 lose; no judge
        "id": "q4",
        "question": "Which novel came first, Dune or Foundation?",
        "gold": "Dune",
        "type": "comparison",
        "supporting_titles": ["Dune", "Foundation"],
        "systems": {
            "aisearch": {
                "prediction": "",
                "short": None,
                "evidence": [],
                "route": None,
                "node_seconds": {"master": 40.0},
                "latency_s": 40.0,
                "error": "RuntimeError: boom",
            },
            "rag": {
                "prediction": "Dune",
                "short": "Dune",
                "evidence": [{"id": "r1", "title": "Dune"}],
                "tokens": {"writer": {"prompt": 710, "completion": 2}},
                "latency_s": 9.0,
                "error": None,
            },
            "closed_book": {"prediction": "Foundation", "short": "Foundation", "latency_s": 3.0},
        },
    }
    return [q1, q2, q3, q4]


def _write_run(run_dir: Path, records: list[dict], with_summary: bool = True) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records]
    (run_dir / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if with_summary:
        (run_dir / "summary.json").write_text(json.dumps(summarise(records, CONFIG)), encoding="utf-8")
    return run_dir


def test_record_metrics_per_system():
    q1, q2, q3, q4 = _records()
    assert record_metrics(q1, "aisearch") == {
        "em": 1.0,
        "f1": 1.0,
        "cover": 1.0,
        "evidence_title_recall": 1.0,
        "answer_in_evidence": 1.0,
        "citation_title_recall": 0.5,
        "citation_precision": 1.0,
        "citation_recall": 1.0,
    }
    lost_in_retrieval = {**q1, "gold": "Woman's World"}
    assert record_metrics(lost_in_retrieval, "aisearch")["answer_in_evidence"] == 0.0
    assert record_metrics({**q1, "gold": "yes"}, "aisearch")["answer_in_evidence"] is None
    m2 = record_metrics(q2, "aisearch")
    assert (m2["em"], m2["f1"], m2["cover"]) == (0.0, pytest.approx(0.5), 1.0)
    assert (m2["citation_precision"], m2["citation_recall"]) == (0.5, 0.5)
    m3 = record_metrics(q3, "aisearch")
    assert (m3["f1"], m3["cover"], m3["citation_title_recall"]) == (0.0, 0.0, 0.0)
    assert m3["citation_precision"] is None and m3["citation_recall"] is None
    # an error scores 0 even when the short answer happens to be right
    assert record_metrics(q3, "rag")["em"] == 0.0
    assert record_metrics(q4, "aisearch")["citation_title_recall"] is None  # a system that does not cite
    assert record_metrics(q1, "rag")["citation_precision"] is None
    assert record_metrics(q2, "closed_book") == dict.fromkeys(record_metrics(q2, "rag"))


def test_summarise_hand_made_fixture():
    s = summarise(_records(), CONFIG)
    approx = pytest.approx
    assert s["n"] == 4
    # aisearch EM [1,0,0,0], F1 [1,.5,0,0], cover [1,1,0,0]; rag EM/F1/cover [0,1,0,1]
    assert (s["em"], s["f1"], s["cover"]) == (0.25, approx(0.375), 0.5)
    assert (s["baseline_em"], s["baseline_f1"], s["baseline_cover"]) == (0.5, 0.5, 0.5)
    # F1 outcomes: win, lose, tie, lose
    assert (s["wins"], s["ties"], s["losses"]) == (1, 1, 2)
    assert s["nwr"] == approx(-0.25)
    assert s["nwr_sign_p"] == 1.0
    assert s["nwr_ci"][0] <= -0.25 <= s["nwr_ci"][1]
    assert s["em_flips"] == {"aisearch_only": 1, "rag_only": 2}
    assert s["em_sign_p"] == 1.0
    assert s["em_diff_ci"][0] <= -0.25 <= s["em_diff_ci"][1]
    # latencies: aisearch [10,30,20,40] -> P50 25, P80 34; rag [5,7,60,9] -> P50 8, P80 29.4
    assert (s["latency_p50_s"], s["latency_p80_s"]) == (approx(25.0), approx(34.0))
    assert (s["baseline_latency_p50_s"], s["baseline_latency_p80_s"]) == (approx(8.0), approx(29.4))
    assert s["latency_ratio_p50"] == approx(3.125)
    assert s["errors"] == 2
    assert (
        s["by_comparison"]["earlier: settled"]["n"] == 1 and s["by_comparison"]["earlier: settled"]["em"] == 1
    )
    assert s["by_comparison"]["whole"]["n"] == 2, "q2 and q3; q4's error is its own group"
    assert s["errors_by_system"] == {"aisearch": 1, "rag": 1, "closed_book": 0}

    ours = s["systems"]["aisearch"]
    assert ours["n"] == 4 and ours["errors"] == 1
    assert ours["evidence_title_recall"] == approx(0.375)
    assert ours["citation_title_recall"] == approx(1 / 3)  # q1 .5, q2 .5, q3 0, q4 undefined
    assert ours["citation_precision"] == approx(0.75)  # q1 1, q2 .5
    assert ours["citation_recall"] == approx(0.75)
    assert (ours["judge_correctness"], ours["judge_faithfulness"]) == (1.5, 2.0)
    rag = s["systems"]["rag"]
    assert rag["evidence_title_recall"] == 0.5  # .5, 1, 0, .5
    assert rag["citation_precision"] is None
    assert (rag["judge_correctness"], rag["judge_faithfulness"]) == (2.0, 1.5)
    closed = s["systems"]["closed_book"]
    assert (closed["n"], closed["em"], closed["latency_p50_s"]) == (2, 0.5, 2.5)

    # judge: pairwise win, lose (q3's null skipped); agreement of "correct" with EM
    assert (s["nwr_judge"], s["judge_wins"], s["judge_ties"], s["judge_losses"]) == (0.0, 1, 0, 1)
    assert s["nwr_judge_sign_p"] == 1.0
    assert s["judge_agreement"] == {"aisearch": 1.0, "rag": 0.5}
    assert s["judge_kappa"]["rag"] == 0.0

    assert s["by_type"]["bridge"]["aisearch"] == {"n": 2, "em": 0.0, "f1": 0.25}
    assert s["by_type"]["bridge"]["rag"] == {"n": 2, "em": 0.5, "f1": 0.5}
    assert s["by_type"]["bridge"]["nwr"] == -0.5
    assert s["by_type"]["comparison"]["closed_book"] == {"n": 2, "em": 0.5, "f1": 0.5}
    assert s["by_type"]["comparison"]["nwr"] == 0.0

    assert s["route_counts"] == {"executor": 2, "error": 1, "planner": 1}
    executor = s["by_route"]["executor"]
    assert (executor["n"], executor["em"], executor["f1"], executor["rag_em"], executor["nwr"]) == (
        2,
        0.5,
        0.5,
        0.0,
        0.5,
    )
    assert (executor["latency_p50_s"], executor["latency_p80_s"]) == (approx(15.0), approx(18.0))
    assert s["by_route"]["planner"]["nwr"] == -1.0
    assert s["by_route"]["error"]["rag_f1"] == 1.0
    assert s["replan_rate"] == 0.25

    assert s["node_seconds"]["master"] == {"mean": 11.25, "p50": 2.0, "p80": approx(17.2), "n": 4}
    assert s["node_seconds"]["writer"]["mean"] == 4.0
    assert s["node_seconds_by_system"]["rag"]["read"]["n"] == 1
    tokens = s["tokens"]
    assert tokens["aisearch"]["master"] == {"prompt_mean": approx(1700 / 3), "completion_mean": 30.0, "n": 3}
    assert tokens["aisearch"]["planner"]["prompt_mean"] == 1000.0
    assert tokens["aisearch"]["total"] == {"prompt_mean": 1250.0, "completion_mean": 87.5, "n": 4}
    assert tokens["rag"]["writer"]["prompt_mean"] == 710.0
    assert s["config"] == CONFIG
    json.dumps(s)  # the summary is plain JSON


def test_summarise_without_baseline_or_judge():
    records = _records()
    for record in records:
        record["systems"].pop("rag")
        record.pop("judge", None)
    s = summarise(records, None)
    assert s["baseline_em"] is None and s["latency_ratio_p50"] is None
    assert (s["nwr"], s["wins"], s["nwr_sign_p"]) == (0.0, 0, 1.0)
    assert "nwr_judge" not in s and "judge_agreement" not in s
    assert s["errors"] == 1 and s["config"] == {}
    assert summarise([], {})["n"] == 0


def test_load_records_tolerates_a_corrupt_tail_and_keeps_the_last_duplicate(tmp_path, caplog):
    q1, q2, *_ = _records()
    newer = copy.deepcopy(q1)
    newer["systems"]["aisearch"]["short"] = "First for Women"
    path = tmp_path / "questions.jsonl"
    text = "\n".join([json.dumps(q1), "", json.dumps(q2), json.dumps(newer)]) + '\n{"id": "q3", "gold": "ye'
    path.write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="tools.index.jsonfiles"):
        records = load_records(path)
    assert [r["id"] for r in records] == ["q1", "q2"]
    assert records[0]["systems"]["aisearch"]["short"] == "First for Women"
    assert f"{path}:5: skipped a line that is not JSON" in caplog.text
    assert load_records(tmp_path / "missing.jsonl") == []


def test_markdown_report_renders_the_sections():
    text = markdown(summarise(_records(), CONFIG))
    for expected in (
        "## Headline",
        "| aisearch | 4 | 0.250 | 0.375 | 0.500 |",
        "| closed_book | 2 |",
        "judge correctness",
        "| F1 (per question) | 1 | 1 | 2 | -0.250 |",
        "| judge (pairwise) | 1 | 0 | 1 | 0.000 |",
        "## By question type",
        "| bridge | 2 | 0.000 / 0.250 | 0.500 / 0.500 | – |",
        "## By route",
        "| executor | 2 | 0.500 |",
        "Re-plan rate: 0.250",
        "| earlier: settled | 1 | 0.250 | 1.000 |",
        "## Time per node",
        "## Tokens per role",
        "## Judge agreement with exact match",
        "2 questions with an aisearch or RAG error (aisearch 1, rag 1, closed_book 0).",
        "`aisearch eval qa --limit 4`",
        "2026-11-30",
        "2 cores",
    ):
        assert expected in text, expected


def test_write_report_writes_markdown_and_non_empty_plots(tmp_path):
    run = _write_run(tmp_path / "run", _records())
    path = write_report(run)
    assert path == run / "report.md"
    text = path.read_text(encoding="utf-8")
    for name in (
        "accuracy_by_type.png",
        "accuracy_by_route.png",
        "latency.png",
        "nwr_by_type.png",
        "node_seconds.png",
    ):
        png = run / name
        assert png.exists() and png.stat().st_size > 1000, name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in text
    assert "2026-11-30" in text


def test_write_report_recomputes_a_missing_summary(tmp_path):
    run = _write_run(tmp_path / "run", _records(), with_summary=False)
    with (run / "questions.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"id": "q5", "syst')  # the runner died mid-write
    text = write_report(run).read_text(encoding="utf-8")
    assert "# QA evaluation: 4 questions" in text
    assert "No run configuration recorded" in text


def test_plots_skip_what_has_no_data(tmp_path):
    assert plots([], summarise([], {}), tmp_path / "empty") == []


def test_compare_shows_deltas_and_em_flips(tmp_path):
    records_a = _records()
    records_b = copy.deepcopy(records_a)
    records_b[0]["systems"]["aisearch"]["short"] = "First for Women"  # q1: right -> wrong (broken)
    records_b[1]["systems"]["aisearch"]["short"] = "Paris"  # q2: wrong -> right (fixed)
    records_b[3]["systems"]["aisearch"].update(short="Dune", prediction="Dune", error=None)  # q4 fixed
    run_a = _write_run(tmp_path / "before", records_a)
    run_b = _write_run(tmp_path / "after", records_b)
    text = compare(run_a, run_b)
    assert "# Comparison: before → after" in text
    # aisearch EM 0.25 -> 0.5, F1 .375 -> .5
    assert "| aisearch | em | 0.250 | 0.500 | +0.250 |" in text
    assert "| aisearch | f1 | 0.375 | 0.500 | +0.125 |" in text
    assert "| aisearch | errors | 1 | 0 | -1 |" in text
    assert "| rag | em | 0.500 | 0.500 | +0.000 |" in text
    assert "**2 fixed**" in text and "**1 broken**" in text
    assert "`q2`, `q4`" in text and "Broken: `q1`" in text


def _pairwise_records(verdicts_by_id: dict[str, str]) -> list[dict]:
    return [{"id": qid, "judge": {"pairwise": {"aisearch_vs_rag": v}}} for qid, v in verdicts_by_id.items()]


def test_a_judge_that_always_picks_the_first_answer_shown_is_reported_as_position_biased():
    from evals.breakdowns import judge_position
    from evals.judge import a_first
    from evals.report import _position_lines

    ids = [f"q{i}" for i in range(40)]
    # a judge that always says "A": aisearch wins exactly where it was shown first
    always_a = _pairwise_records({q: "win" if a_first(q) else "lose" for q in ids})
    always_a.append({"id": "q-tie", "judge": {"pairwise": {"aisearch_vs_rag": "tie"}}})
    position = judge_position(always_a)["aisearch_vs_rag"]
    assert (position["A"], position["B"]) == (40, 0), "ties count for neither"
    assert position["sign_p"] < 1e-9
    assert "position-biased" in " ".join(_position_lines({"aisearch_vs_rag": position}))

    # a judge that always prefers aisearch, wherever it is shown, picks A and B as the coin fell
    fair = judge_position(_pairwise_records({q: "win" for q in ids}))["aisearch_vs_rag"]
    shown_first = sum(a_first(q) for q in ids)
    assert (fair["A"], fair["B"]) == (shown_first, 40 - shown_first)
    assert 0 < shown_first < 40
    assert "position-biased" not in " ".join(_position_lines({"aisearch_vs_rag": fair}))


def test_the_report_carries_the_position_check_of_a_judged_run():
    from evals.judge import a_first

    records = _records()
    s = summarise(records, CONFIG)
    assert set(s["judge_position"]) == {"aisearch_vs_rag"}
    picks = s["judge_position"]["aisearch_vs_rag"]
    assert picks["A"] + picks["B"] == 2, "q1's win and q2's lose; q3's null is not a pick"
    expected_a = sum(
        (r["judge"]["pairwise"]["aisearch_vs_rag"] == "win") == a_first(r["id"])
        for r in records
        if (r.get("judge") or {}).get("pairwise", {}).get("aisearch_vs_rag") in ("win", "lose")
    )
    assert picks["A"] == expected_a
    assert "Judge position check (aisearch_vs_rag)" in markdown(s)
