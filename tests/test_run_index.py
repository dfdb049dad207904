"""The run's tool index: vectors reused from ``aisearch tools index`` and from earlier runs, a few
records embedded in the run, BM25 alone when too many lack a vector."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.tool_catalog import BagOfWordsEmbedder, write_catalog
from tools.catalog.augment import cached_queries
from tools.catalog.index import open_tool_index
from tools.catalog.load import load_catalog
from tools.catalog.model import Catalog, CatalogServer, CatalogTool
from tools.catalog.paths import index_dir
from tools.catalog.retrieve import RetrievalOptions, ToolRetriever, record_kinds
from tools.catalog.run_index import RunIndex
from tools.index.jsonfiles import write_json
from tools.index.store import IndexStore

OPTIONS = RetrievalOptions(k=2, decompose="none")


def catalog(tmp_path: Path) -> Catalog:
    return asyncio.run(load_catalog([write_catalog(tmp_path / "tools.json")], bundled=False))


def test_the_index_of_aisearch_tools_index_is_reused_with_its_synthetic_queries(tmp_path: Path) -> None:
    servers = catalog(tmp_path)
    write_json(tmp_path / "synthetic" / "x.json", {})  # an unrelated cache file is ignored
    synthetic = {"Trains": ["book me a seat to Lyon"]}
    open_tool_index(
        servers, store=IndexStore(index_dir(tmp_path)), embedder=BagOfWordsEmbedder(), synthetic=synthetic
    )
    assert cached_queries(servers, tmp_path) == {}  # the queries live in the built index only

    embedder = BagOfWordsEmbedder()
    built = RunIndex(embedder, root=tmp_path).build(servers)

    assert embedder.encoded == [] and built.dense and built.index.embedded == 0
    assert any(e.kind == "query" and e.server == "Trains" for e in built.index.entries)
    with_queries = RetrievalOptions(k=2, decompose="none", kinds=record_kinds(synthetic_queries=True))
    hit = ToolRetriever(built.index).search("seat to Lyon", with_queries).servers[0]
    assert (hit.server, hit.via) == ("Trains", "query")


def test_a_changed_tool_is_embedded_once_then_comes_from_the_run_cache(tmp_path: Path) -> None:
    servers = catalog(tmp_path)
    open_tool_index(servers, store=IndexStore(index_dir(tmp_path)), embedder=BagOfWordsEmbedder())
    weather = servers.servers["Weather"]
    servers.add(
        CatalogServer(
            weather.id, weather.description, (CatalogTool("get_alerts", "storm alerts"),), "", {}, ""
        )
    )

    first = BagOfWordsEmbedder()
    RunIndex(first, root=tmp_path).build(servers)
    again = BagOfWordsEmbedder()
    built = RunIndex(again, root=tmp_path).build(servers)

    assert sorted(first.encoded) == [
        "Weather | get_alerts: storm alerts",
        "Weather: weather forecast rain Tools: get_alerts",
    ]
    assert again.encoded == [] and built.dense
    assert ToolRetriever(built.index).search("storm alerts", OPTIONS).servers[0].server == "Weather"


def test_a_catalogue_without_vectors_is_retrieved_by_bm25_alone(tmp_path: Path) -> None:
    embedder = BagOfWordsEmbedder()
    index = RunIndex(embedder, root=tmp_path, max_embed=3)
    built = index.build(catalog(tmp_path))

    assert not built.dense and embedder.encoded == []
    options = RetrievalOptions(k=2, decompose="none", dense=False)
    result = ToolRetriever(built.index).search("train tickets", options)
    assert result.servers[0].server == "Trains" and embedder.encoded == []
    assert index.build(catalog(tmp_path)) is built  # the same catalogue costs nothing twice
