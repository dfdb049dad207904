"""The hop reader's training examples: labelled from QA run records' chains, tuning questions only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.hop_read import first_turns, hop_sources
from core.state import Evidence
from distill.reader import read_examples, reader_examples, write_examples
from evals.qa_data import split_of

TUNE, OTHER_TUNE, HELD_OUT = "q0", "q1", "q2"
PASSAGES = {
    "e1": ("Bansaan", "Bansaan is an island in the province of Bohol, Philippines."),
    "e2": ("Hinagdanan Cave", "Hinagdanan Cave is a cave on Panglao Island, in Bohol."),
    "e3": ("Lapu-Lapu", "Lapu-Lapu City is on Mactan Island."),
}


def record(
    qid: str, short: str, chain: list[tuple[str, str, list[str]]], aliases: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A run record whose aisearch chain read the given passages hop by hop."""
    return {
        "id": qid,
        "question": "The territory containing Bansaan Island is located at which island?",
        "gold": "Panglao Island",
        "aliases": list(aliases),
        "supporting_titles": ["Bansaan", "Hinagdanan Cave"],
        "systems": {
            "aisearch": {
                "short": short,
                "chain": [
                    {
                        "question": q,
                        "answer": a,
                        "status": "answered" if a else "unanswered",
                        "evidence_ids": ids,
                    }
                    for q, a, ids in chain
                ],
                "evidence": [
                    {"id": eid, "title": title, "content": content, "kind": "document"}
                    for eid, (title, content) in PASSAGES.items()
                ],
            }
        },
    }


def test_the_ids_used_here_fall_in_the_parts_they_stand_for() -> None:
    assert split_of(TUNE) == split_of(OTHER_TUNE) == "tune" and split_of(HELD_OUT) == "held_out"


def test_a_right_chain_labels_every_hop_and_the_prompt_is_the_readers() -> None:
    chain = [
        ("Which territory contains Bansaan?", "Bohol", ["e1"]),
        ("Which island is in Bohol?", "Panglao", ["e2"]),
    ]

    examples, counts = reader_examples([record(TUNE, "Panglao Island", chain)])

    assert [e.target for e in examples] == ["Bohol", "Panglao Island"], "earlier hop: its answer; last: gold"
    assert counts == {"chain": 1, "gold": 1}
    passage = Evidence(
        id="e2", kind="document", title="Hinagdanan Cave", content=PASSAGES["e2"][1], source="", task_id=""
    )
    sent = first_turns(hop_sources([passage], "Which island is in Bohol?"), "Which island is in Bohol?")
    assert [m["content"] for m in examples[1].messages] == [m.content for m in sent], "what read_hop sends"
    assert [m["role"] for m in examples[1].messages] == ["system", "user"]


def test_a_wrong_chain_labels_only_its_last_hop_unknown_when_its_passages_lack_the_answer() -> None:
    chain = [
        ("Which territory contains Bansaan?", "Cebu", ["e3"]),
        ("Which island is in Cebu?", "Mactan Island", ["e3"]),
    ]

    examples, counts = reader_examples([record(TUNE, "Mactan Island", chain)])

    assert [e.target for e in examples] == ["unknown"], "the earlier hop of a wrong chain has no label"
    assert counts == {"unknown": 1}


def test_a_last_hop_that_read_a_supporting_document_without_the_answer_has_no_label() -> None:
    chain = [
        ("Which territory contains Bansaan?", "Cebu", ["e3"]),
        ("Which province is Bansaan in?", "Bohol", ["e1"]),
    ]

    examples, counts = reader_examples([record(TUNE, "Bohol", chain)])

    assert examples == [] and counts == {}, "its passages may answer the question it was asked"


def test_without_supporting_titles_no_last_hop_is_labelled_unknown() -> None:
    chain = [("Which island is in Cebu?", "Mactan Island", ["e3"])]

    examples, _ = reader_examples([record(TUNE, "Mactan Island", chain) | {"supporting_titles": []}])

    assert examples == [], "nothing says the passages could not answer"


def test_an_alias_the_passages_give_is_the_target() -> None:
    chain = [("Which island is Bansaan near?", "", ["e2"])]

    examples, _ = reader_examples([record(TUNE, "", chain, aliases=("Panglao",)) | {"gold": "Panglao isle"}])

    assert [e.target for e in examples] == ["Panglao"], "the gold answer is not in the passages; its alias is"


def test_held_out_questions_and_repeated_prompts_give_no_example() -> None:
    chain = [("Which island is in Bohol?", "Panglao Island", ["e2"])]
    records = [
        record(HELD_OUT, "Panglao Island", chain),
        record(TUNE, "x", chain),
        record(OTHER_TUNE, "y", chain),
    ]

    examples, counts = reader_examples(records)

    assert [e.task_id for e in examples] == [f"{TUNE}#1"], "the same prompt twice is one example"
    assert counts == {"held_out_records": 1, "gold": 1}


def test_a_hop_without_its_passages_or_question_is_left_out() -> None:
    chain = [("Which territory contains Bansaan?", "Bohol", ["missing"]), ("", "Panglao Island", ["e2"])]

    assert reader_examples([record(TUNE, "Panglao Island", chain)]) == ([], {})
    assert reader_examples([{"systems": {}}]) == ([], {"records_without_id": 1})


def test_examples_round_trip_and_a_bad_line_is_named(tmp_path: Path) -> None:
    chain = [
        ("Which territory contains Bansaan?", "Bohol", ["e1"]),
        ("Which island is in Bohol?", "Panglao", ["e2"]),
    ]
    examples, _ = reader_examples([record(TUNE, "Panglao Island", chain)])
    path = tmp_path / "reader.jsonl"

    write_examples(examples, path)

    assert read_examples(path) == examples
    path.write_text(path.read_text() + '{"task_id": "x"}\n')
    with pytest.raises(ValueError, match=r"reader\.jsonl:3"):
        read_examples(path)


def test_the_command_writes_the_examples_of_run_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    monkeypatch.setenv("AISEARCH_DISTILL_DIR", str(tmp_path / "distill"))
    run = tmp_path / "run"
    run.mkdir()
    chain = [("Which island is in Bohol?", "Panglao Island", ["e2"])]
    (run / "questions.jsonl").write_text(json.dumps(record(TUNE, "Panglao Island", chain)) + "\n")

    assert main(["distill", "reader-examples", str(run)]) == 0

    said = json.loads(capsys.readouterr().out)
    assert said["examples"] == 1 and said["gold"] == 1
    assert [e.target for e in read_examples(tmp_path / "distill" / "reader.jsonl")] == ["Panglao Island"]
    assert main(["distill", "reader-examples", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "no QA run records" in err and "Traceback" not in err
