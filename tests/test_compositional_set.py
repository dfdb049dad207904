"""The compositional sets (``evals/data/compositional.jsonl`` and its held-out companion
``compositional_heldout.jsonl``): two facts looked up, then a year difference. Each gold answer is the difference of the two facts it records, and each fact stands in
its gold paragraph of the pooled HotpotQA corpus (checked when ``../shared`` is beside the repo)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.qa_data import load_questions

REPO = Path(__file__).resolve().parents[1]
SETS = [REPO / "evals" / "data" / name for name in ("compositional.jsonl", "compositional_heldout.jsonl")]
CORPUS = REPO.parent / "shared" / "data" / "hotpotqa" / "corpus.jsonl"


@pytest.mark.parametrize("data", SETS, ids=lambda path: path.stem)
def test_every_gold_is_the_difference_of_its_two_facts(data: Path) -> None:
    rows = load_questions(data)
    assert len(rows) >= 12 and len({row["id"] for row in rows}) == len(rows)
    for row in rows:
        first, second = (row["facts"][title] for title in row["supporting_titles"])
        assert row["answer"] == str(second - first) and f"{row['answer']} years" in row["answer_aliases"]
        assert row["question"].startswith("How many years after")


def test_the_held_out_set_shares_no_question_with_the_tuning_set() -> None:
    tuning, held_out = ({row["id"] for row in load_questions(data)} for data in SETS)
    assert not tuning & held_out


@pytest.mark.skipif(not CORPUS.is_file(), reason="the pooled HotpotQA corpus is not beside the repository")
@pytest.mark.parametrize("data", SETS, ids=lambda path: path.stem)
def test_every_fact_stands_in_its_gold_paragraph(data: Path) -> None:
    texts: dict[str, str] = {}
    with CORPUS.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            texts.setdefault(row["title"], row["text"])
    for row in load_questions(data):
        for title, year in row["facts"].items():
            assert str(year) in texts[title], (row["id"], title, year)
