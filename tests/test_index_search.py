"""Ranking on the fixture corpus with the real MiniLM model: BM25, dense, hybrid (RRF), rerank."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools.index.ingest import index_paths
from tools.index.rankers import reciprocal_rank_fusion
from tools.index.rerank import ListwiseReranker, parse_permutation, ranking_prompt
from tools.index.search import Searcher
from tools.index.snippets import snippet
from tools.index.store import IndexStore

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "docs"

KNOWN = [  # question -> the title that answers it
    ("Who built the Harrow Point lighthouse?", "The Harrow Point Lighthouse"),
    ("How often should a sourdough starter be fed?", "Sourdough Starter"),
    ("Which is the largest moon of Varnis?", "The Moons of Varnis"),
    ("When did the Kestrel Bridge open?", "Kestrel Bridge"),
    ("frogs with see-through skin", "Glass frogs"),
    ("how long until compost is ready to use", "Compost heaps"),
]


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    root = tmp_path_factory.mktemp("search")
    shutil.copytree(FIXTURES, root / "docs")
    store = IndexStore(root / "index")
    index_paths([root / "docs"], store=store)
    return Searcher(store.require("docs"))


def _titles(searcher: Searcher, hits: list) -> list[str]:
    passages = searcher.fetch([h.id for h in hits])
    return [passages[h.id]["title"] for h in hits]


@pytest.mark.parametrize(("question", "title"), KNOWN)
def test_hybrid_finds_the_answering_document_first(searcher: Searcher, question: str, title: str) -> None:
    assert _titles(searcher, searcher.rank(question, 3, "hybrid"))[0] == title


def test_each_ranker_on_its_strength(searcher: Searcher) -> None:
    assert _titles(searcher, searcher.rank("Miriam Calloway", 1, "bm25")) == ["The Harrow Point Lighthouse"]
    assert _titles(searcher, searcher.rank("transparent amphibian belly", 1, "dense")) == ["Glass frogs"]
    assert searcher.rank("zzzz qqqq", 5, "bm25") == []  # no shared word: no BM25 hit
    dense = searcher.rank("the sea", 3, "dense")
    assert len(dense) == 3 and all(-1.0 <= h.score <= 1.0 for h in dense)
    assert [h.score for h in dense] == sorted((h.score for h in dense), reverse=True)
    with pytest.raises(ValueError, match="unknown ranker"):
        searcher.rank("x", 1, "magic")


def test_exact_dense_search_agrees_with_chromadb(searcher: Searcher) -> None:
    vector = searcher.embedder.encode_query("granite tower on a headland")
    exact = [pid for pid, _ in searcher._dense.top(vector, 5)]  # noqa: SLF001 - compare both paths
    assert exact == [pid for pid, _ in searcher.collection.query(vector.tolist(), 5)]


def test_subqueries_are_fused(searcher: Searcher) -> None:
    titles = _titles(searcher, searcher.fused(["What spans the river Ome?", "Who built the lighthouse?"], 4))
    assert {"Kestrel Bridge", "The Harrow Point Lighthouse"} <= set(titles)


def test_bm25_scores_equal_rank_bm25() -> None:
    from rank_bm25 import BM25Okapi

    from tools.index.bm25 import BM25Index, tokenize

    texts = [f"{word} river bridge {word} number {i}" for i, word in enumerate(["ome", "calder", "sea"] * 4)]
    texts += ["the river ome the river", "a lighthouse on the sea"]
    tokens = [tokenize(t) for t in texts]
    index, reference = BM25Index([str(i) for i in range(len(texts))], tokens), BM25Okapi(tokens)
    for query in ("river ome", "sea sea lighthouse", "the", "unknown words"):
        assert index.scores(query).tolist() == pytest.approx(reference.get_scores(tokenize(query)).tolist())
    assert [pid for pid, _ in index.top("lighthouse", 5)] == ["13"]


def test_reciprocal_rank_fusion() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], k=60)
    assert [pid for pid, _ in fused] == ["b", "a", "d", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert [pid for pid, _ in reciprocal_rank_fusion([["x"], ["y"]])] == ["x", "y"]  # ties: first seen


def test_listwise_rerank_slides_back_to_front(searcher: Searcher) -> None:
    calls: list[list[str]] = []

    def reverse(messages: list[dict[str, str]]) -> str:
        user = messages[-1]["content"]
        count = int(user.split(" passages")[0].rsplit(" ", 1)[-1])
        calls.append([line.split("] ", 1)[1][:12] for line in user.splitlines() if line.startswith("[")])
        return " > ".join(f"[{i}]" for i in range(count, 0, -1))

    reranker = ListwiseReranker(reverse, window=4, step=2, depth=8)
    ids = [f"p{i}" for i in range(10)]
    order = reranker.rerank("q", ids, {pid: f"text of {pid}" for pid in ids})
    assert [c[0] for c in calls] == ["text of p4", "text of p2", "text of p0"]  # windows 4-8, 2-6, 0-4
    # windows [p4..p7] -> p7 p6 p5 p4; [p2 p3 p7 p6] -> p6 p7 p3 p2; [p0 p1 p6 p7] -> p7 p6 p1 p0:
    # the best of the bottom window is carried to the top by the overlaps; below the depth: untouched
    assert order == ["p7", "p6", "p1", "p0", "p3", "p2", "p5", "p4", "p8", "p9"]

    def broken(messages: list[dict[str, str]]) -> str:
        raise TimeoutError("model down")

    assert ListwiseReranker(broken).rerank("q", ids, {}) == ids

    def first_is_glass_frogs(messages: list[dict[str, str]]) -> str:
        lines = [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]
        best = next(i for i, line in enumerate(lines, 1) if "Glass frogs" in line or "transparent" in line)
        return f"[{best}]"

    searcher.reranker = ListwiseReranker(first_is_glass_frogs, window=5, step=3, depth=10)
    try:
        hits = searcher.rank("river", 3, "hybrid", rerank=True)
    finally:
        searcher.reranker = None
    assert _titles(searcher, hits)[0] == "Glass frogs"


def test_permutation_parsing_and_prompt() -> None:
    assert parse_permutation("[3] > [1] > [3] > [9]", 4) == [2, 0, 1, 3]
    assert parse_permutation("<think>[4]</think> 2 > 1", 4) == [1, 0, 2, 3]
    assert parse_permutation("no idea", 2) == [0, 1]
    messages = ranking_prompt("what?", ["one " * 300, "two"], max_chars=50)
    assert "[1] " in messages[1]["content"] and len(messages[1]["content"]) < 900


def test_snippets_are_bounded_and_query_focused() -> None:
    text = " ".join(f"Filler sentence {i} about nothing." for i in range(60)) + " The keyword zebra is here."
    cut = snippet(text, "zebra", limit=200)
    assert len(cut) <= 200 and "zebra" in cut and cut.startswith("…")
    assert snippet("short text", "x") == "short text"


def test_searcher_sees_a_reindex(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index")
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpacas\n\nAlpacas are kept for their fleece.")
    index_paths([folder], "notes", store=store)
    searcher = Searcher(store.require("notes"))
    assert _titles(searcher, searcher.rank("fleece", 5, "hybrid")) == ["Alpacas"]
    (folder / "b.md").write_text("# Fleece washing\n\nWash fleece in hot water.")
    index_paths([folder], "notes", store=store)
    assert set(_titles(searcher, searcher.rank("fleece", 5, "hybrid"))) == {"Alpacas", "Fleece washing"}


def test_collections_are_described_by_what_they_hold() -> None:
    from tools.index.describe import STDLIB, describe_sources

    assert describe_sources(["pydoc:topics/with", "pydoc:modules/json"]) == STDLIB
    assert describe_sources(["/home/u/notes/a.md", "/home/u/notes/sub/b.md"]) == "2 files under notes"
    assert describe_sources(["pydoc:topics/with", "/tmp/x/readme.md"]) == f"{STDLIB} and the file readme.md"
    assert describe_sources([]) == "no documents yet"
