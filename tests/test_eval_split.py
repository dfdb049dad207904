"""The held-out part of every question set is fixed by id and never mixed into tuning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.qa_data import DatasetError, load_questions, split_of
from evals.summary import summarise


def write_questions(path: Path, n: int) -> Path:
    rows = [{"id": f"q{i}", "question": f"Question {i}?", "answer": "x", "type": "bridge"} for i in range(n)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_the_parts_are_fixed_by_id_disjoint_and_about_a_third_held_out(tmp_path: Path) -> None:
    data = write_questions(tmp_path / "dev.jsonl", 300)
    tune = {q["id"] for q in load_questions(data, split="tune")}
    held = {q["id"] for q in load_questions(data, split="held_out")}

    assert tune.isdisjoint(held) and len(tune | held) == 300
    assert 70 <= len(held) <= 130
    assert all(split_of(qid) == "held_out" for qid in held)
    shuffled = {q["id"] for q in load_questions(data, n=20, seed=7, split="held_out")}
    assert shuffled <= held, "--seed and --n select within the part"
    with pytest.raises(DatasetError, match="unknown split"):
        load_questions(data, split="test")


def test_a_question_type_is_selected_within_the_part(tmp_path: Path) -> None:
    rows = [
        {"id": f"q{i}", "question": f"Q{i}?", "answer": "x", "type": "comparison" if i % 3 == 0 else "bridge"}
        for i in range(60)
    ]
    data = tmp_path / "dev.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")

    held = load_questions(data, split="held_out", kind="comparison")
    assert held and all(q["type"] == "comparison" and split_of(q["id"]) == "held_out" for q in held)
    assert len(load_questions(data, n=2, kind="bridge")) == 2
    with pytest.raises(DatasetError, match="no question of type 'yesno'.*bridge, comparison"):
        load_questions(data, kind="yesno")


def test_the_summary_reports_the_tuning_and_held_out_parts_side_by_side() -> None:
    ids = ["q0", "q1", "q2", "q3", "q4", "q5"]
    records = [
        {
            "id": qid, "question": "?", "gold": "x", "type": "bridge",
            "systems": {"aisearch": {"prediction": "x", "short": "x"}, "rag": {"prediction": "y", "short": "y"}},
        }
        for qid in ids
    ]  # fmt: skip
    parts = summarise(records)["by_split"]

    expected = {split_of(qid) for qid in ids}
    assert set(parts) == expected
    assert sum(entry["aisearch"]["n"] for entry in parts.values()) == len(ids)
    assert all(entry["aisearch"]["em"] == 1.0 and entry["rag"]["em"] == 0.0 for entry in parts.values())


def test_aliases_count_and_chains_say_where_they_broke() -> None:
    def record(qid: str, short: str, chain: list[dict]) -> dict:
        return {
            "id": qid, "question": "?", "gold": "Hewlett Packard", "aliases": ["Hewlett-Packard"],
            "type": "2hop", "supporting_titles": ["Dell", "Compaq"],
            "systems": {"aisearch": {"prediction": short, "short": short, "chain": chain},
                        "rag": {"prediction": "Compaq", "short": "Compaq"}},
        }  # fmt: skip

    hop = {"question": "Which company led PC sales in 1994?", "answer": "Compaq", "status": "answered"}
    records = [
        record("a", "Hewlett-Packard", [hop | {"titles": ["Dell"]}, hop | {"titles": ["Compaq"]}]),
        record("b", "Compaq", [hop | {"titles": ["Apple"]}, hop | {"titles": ["Compaq"]}]),
        record("c", "", [hop | {"titles": ["Dell"]}, hop | {"titles": ["Compaq"], "status": "unanswered"}]),
        record("d", "Dell", []),
    ]
    summary = summarise(records)

    assert summary["systems"]["aisearch"]["em"] == 0.25, "an alias is an exact match"
    breaks = summary["chain_breaks"]
    assert (breaks["chains"], breaks["chains_right"]) == (3, 1)
    assert breaks["breaks"] == {"retrieval at hop 1": 1, "reading at hop 2 (unknown)": 1}
    assert breaks["hops"]["2"] == {"reached": 3, "retrieved": 3, "answered": 2}
    assert set(summary["by_chain"]) == {"chain complete", "chain broken", "no chain"}


def test_a_chain_counts_as_right_exactly_when_the_runs_em_does() -> None:
    from evals.chain_summary import chain_breaks

    hop = {"question": "Which company led PC sales in 1994?", "answer": "Compaq", "status": "answered"}
    chain = [hop | {"titles": ["Dell"]}, hop | {"titles": ["Compaq"]}]

    def record(output: dict) -> dict:
        return {"id": "q", "question": "?", "gold": "Compaq", "supporting_titles": ["Dell", "Compaq"],
                "type": "2hop", "systems": {"aisearch": output | {"chain": chain}}}  # fmt: skip

    errored = record({"prediction": "", "short": "Compaq", "error": "the model endpoint timed out"})
    no_short = record({"prediction": "Compaq"})  # EM reads the prediction when there is no short answer

    assert chain_breaks([errored])["chains_right"] == 0, "an errored run scores 0, whatever it wrote"
    assert chain_breaks([no_short])["chains_right"] == 1
