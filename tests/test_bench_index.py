"""The index-build benchmark builds a real collection and reports its throughput per tenth."""

from __future__ import annotations

import json

import pytest

from bench.index import markdown, run, synthetic_corpus


def test_synthetic_passages_all_have_the_same_length(tmp_path) -> None:
    path = tmp_path / "corpus.jsonl"
    synthetic_corpus(path, 20, words=12)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 20 and len({r["title"] for r in rows}) == 20
    assert {len(r["text"].split()) for r in rows} == {12}


@pytest.mark.slow
def test_a_small_build_reports_every_tenth_and_its_memory() -> None:
    report = run(n=300, words=8)

    assert report["passages"] == 300
    assert [row["up_to"] for row in report["tenths"]][-1] == 300
    assert all(row["passages_per_s"] > 0 and 0 < row["embed_share"] <= 1 for row in report["tenths"])
    assert report["peak_rss_mib"] > 0
    assert "| passages stored |" in markdown(report)
