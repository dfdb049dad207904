"""The retrieval evaluation on a tiny HotpotQA-format fixture (the JSON contract of issue 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.index_cli import main as index_cli
from evals import retrieval

CORPUS = [
    (
        "Ada Lovelace",
        "Ada Lovelace was an English mathematician who wrote the first published computer program.",
    ),
    (
        "Analytical Engine",
        "The Analytical Engine was a mechanical computer designed by Charles Babbage in 1837.",
    ),
    (
        "Charles Babbage",
        "Charles Babbage was an English polymath who originated the concept of a programmable computer.",
    ),
    ("Kestrel Bridge", "The Kestrel Bridge is a steel arch bridge over the river Ome, opened in 1932."),
    ("River Ome", "The river Ome flows 140 kilometres from the Calder hills to the sea."),
    ("Glass frog", "Glass frogs are amphibians with transparent belly skin."),
]
QUESTIONS = [
    {
        "id": "q1",
        "question": "Who designed the machine that Ada Lovelace wrote the first program for?",
        "answer": "Charles Babbage",
        "type": "bridge",
        "supporting_titles": ["Ada Lovelace", "Analytical Engine"],
    },
    {
        "id": "q2",
        "question": "How long is the river that the Kestrel Bridge crosses?",
        "answer": "140 kilometres",
        "type": "bridge",
        "supporting_titles": ["Kestrel Bridge", "River Ome"],
    },
    {
        "id": "q3",
        "question": "Are glass frogs and Charles Babbage both English?",
        "answer": "no",
        "type": "comparison",
        "supporting_titles": ["Glass frog", "Charles Babbage"],
    },
]


@pytest.fixture
def hotpot(tmp_path: Path) -> tuple[Path, Path]:
    corpus, dev = tmp_path / "corpus.jsonl", tmp_path / "dev.jsonl"
    corpus.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in CORPUS))
    dev.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return dev, corpus


@pytest.mark.slow
def test_run_returns_the_json_contract(hotpot: tuple[Path, Path], tmp_path: Path) -> None:
    dev, corpus = hotpot
    subqueries = {"q2": ["Kestrel Bridge river", "River Ome length"]}

    def prefer_last(messages: list[dict[str, str]]) -> str:
        count = sum(line.startswith("[") for line in messages[-1]["content"].splitlines())
        return " > ".join(f"[{i}]" for i in range(count, 0, -1))

    result = retrieval.run(
        dev, corpus, index_dir=tmp_path / "index", rerank_chat=prefer_last, subqueries=subqueries
    )
    rankers = ["bm25", "dense", "hybrid", "hybrid_links", "hybrid_rerank", "hybrid_subqueries"]
    assert result["n"] == 3 and result["rankers"] == rankers and result["passages"] == 6
    for key in ("recall@5", "recall@10", "both@5", "both@10", "query_ms_p50", "query_ms_p95"):
        assert set(result[key]) == set(rankers), key
    assert all(value == 1.0 for value in result["recall@10"].values())  # 6 passages: all are in the top 10
    assert 0.0 <= result["recall@5"]["bm25"] <= 1.0 and result["both@10"]["hybrid"] == 1.0
    assert result["recall@10_by_type"]["bridge"]["n"] == 2
    assert result["build"]["reused"] is False and result["build_seconds"] > 0 and result["index_bytes"] > 0

    again = retrieval.run(dev, corpus, n=2, index_dir=tmp_path / "index")
    assert again["n"] == 2 and again["build"]["reused"] is True and again["build"]["embedded"] == 0
    assert again["rankers"] == ["bm25", "dense", "hybrid", "hybrid_links"]
    assert again["build"]["last_full_build"]["embedded"] == 6

    json_path, md_path = retrieval.write_results(again, tmp_path / "out", command="aisearch eval retrieval …")
    assert json.loads(json_path.read_text())["recall@10"] == again["recall@10"]
    assert "| hybrid |" in md_path.read_text() and json_path.name.startswith("retrieval-")


def test_cli_prints_one_json_object(
    hotpot: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev, corpus = hotpot
    argv = ["eval", "retrieval", "--data", str(dev), "--corpus", str(corpus), "--n", "2", "--json"]
    assert index_cli([*argv, "--index-dir", str(tmp_path / "index"), "--out", str(tmp_path / "out")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["n"] == 2 and set(printed["recall@5"]) == {"bm25", "dense", "hybrid", "hybrid_links"}
    assert {"recall@10", "both@10", "query_ms_p50"} <= set(printed)
    assert len(list((tmp_path / "out").glob("retrieval-*.json"))) == 1


def test_bad_question_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dev, corpus = tmp_path / "dev.jsonl", tmp_path / "corpus.jsonl"
    dev.write_text('{"question": "no gold titles"}\n')
    corpus.write_text('{"title": "A", "text": "a"}\n')
    with pytest.raises(ValueError, match="supporting_titles"):
        retrieval.load_questions(dev)
    argv = ["eval", "retrieval", "--data", str(dev), "--corpus", str(corpus), "--no-write"]
    assert index_cli([*argv, "--index-dir", str(tmp_path / "index")]) == 1
    assert "supporting_titles" in capsys.readouterr().err


def test_index_cli_indexes_lists_and_rejects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpacas\n\nAlpacas are kept for their fleece.")
    base = ["index", "--index-dir", str(tmp_path / "index"), "-q"]
    assert index_cli([*base, str(folder), "--collection", "notes", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passages_total"] == 1 and report["collection"] == "notes"
    assert index_cli([*base, "--list"]) == 0
    assert "notes: 1 passages from 1 sources" in capsys.readouterr().out
    assert index_cli(base) == 1 and "nothing to index" in capsys.readouterr().err
    assert index_cli([*base, str(folder), "--collection", "x"]) == 1
    assert "invalid collection name 'x'" in capsys.readouterr().err


def test_register_shares_an_existing_eval_command() -> None:
    import argparse

    from app.index_cli import register

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    existing = sub.add_parser("eval").add_subparsers(dest="eval_command")
    existing.add_parser("qa").set_defaults(func=lambda args: 7)
    register(sub)
    assert parser.parse_args(["eval", "qa"]).func(None) == 7
    args = parser.parse_args(["eval", "retrieval", "--data", "d", "--corpus", "c"])
    assert args.n is None and args.collection == "hotpotqa" and callable(args.func)


async def test_executor_subqueries_are_generated_once_per_model_and_cached(tmp_path: Path) -> None:
    from evals.subqueries import executor_subqueries
    from tests.support.fakes import EXEC_SUBQUERIES, ScriptedChatModel

    model = ScriptedChatModel().on(
        lambda p: EXEC_SUBQUERIES in p and "Task: How long is the river" in p,
        {"queries": ["Kestrel Bridge", "River Ome length"]},
    )
    model.on(EXEC_SUBQUERIES, lambda p: {"queries": [p.split("Task: ")[-1].splitlines()[0]]})
    cache = tmp_path / "subqueries.jsonl"

    first = await executor_subqueries(QUESTIONS[:2], model, "m1", cache)
    assert first["generated"] == 2 and first["queries"]["q2"] == ["Kestrel Bridge", "River Ome length"]
    assert first["queries"]["q1"] == [QUESTIONS[0]["question"]]

    again = await executor_subqueries(QUESTIONS, model, "m1", cache)
    assert again["generated"] == 1 and len(model.calls) == 3, "cached questions are not asked again"
    other = await executor_subqueries(QUESTIONS[:1], model, "m2", cache)
    assert other["generated"] == 1, "another model writes its own sub-queries"
    assert [json.loads(line)["model"] for line in cache.read_text().splitlines()] == ["m1", "m1", "m1", "m2"]


@pytest.mark.slow
def test_cli_adds_the_executor_models_sub_queries(
    hotpot: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.support.fake_openai import fake_openai
    from tests.support.fakes import EXEC_SUBQUERIES

    dev, corpus = hotpot
    (tmp_path / "config.toml").touch()
    monkeypatch.setenv("AISEARCH_CONFIG", str(tmp_path / "config.toml"))
    with fake_openai(
        [(EXEC_SUBQUERIES, {"queries": ["Kestrel Bridge river", "River Ome length"]})]
    ) as endpoint:
        monkeypatch.setenv("AISEARCH_BASE_URL", endpoint.url)
        argv = [
            "eval",
            "retrieval",
            "--data",
            str(dev),
            "--corpus",
            str(corpus),
            "--json",
            "--no-write",
            "-q",
        ]
        assert index_cli([*argv, "--executor-subqueries", "--index-dir", str(tmp_path / "index")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert "hybrid_subqueries" in printed["rankers"] and printed["subqueries"]["generated"] == 3
    cache = Path(printed["subqueries"]["cache"])
    assert cache.parent == tmp_path / "index" and len(cache.read_text().splitlines()) == 3
