"""Intent-aware tool retrieval on a hand-made catalogue with known cosines: MaxSim per server,
max over intents, tool hits lifted to their servers, decomposition and its fallback, augmentation."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from core.settings import load_settings
from models.factory import openai_chat
from tests.support.fake_openai import fake_openai
from tests.support.tool_catalog import BagOfWordsEmbedder, write_catalog
from tools.catalog.augment import augment, cache_path, cached_queries
from tools.catalog.decompose import IMPLICIT_NEEDS, decompose, implicit_intents, llm_intents, rule_intents
from tools.catalog.index import open_tool_index
from tools.catalog.load import load_catalog
from tools.catalog.model import Catalog, CatalogServer
from tools.catalog.retrieve import DEFAULT_KINDS, RetrievalOptions, ToolRetriever, record_kinds
from tools.index.store import IndexStore

DENSE = RetrievalOptions(k=4, bm25_weight=0.0, decompose="none")


@pytest.fixture
def setup(tmp_path: Path):
    embedder = BagOfWordsEmbedder()
    catalog = asyncio.run(load_catalog([write_catalog(tmp_path / "tools.json")], bundled=False))
    index = open_tool_index(catalog, store=IndexStore(tmp_path / "index"), embedder=embedder)
    return catalog, ToolRetriever(index), embedder


def maxsim(
    retriever: ToolRetriever, embedder: BagOfWordsEmbedder, server: str, intent: str
) -> tuple[float, str]:
    """By hand: the best cosine of ``intent`` with the server's description and tool records."""
    q = embedder.vector(intent)
    scored = [
        (float(embedder.vector(e.text) @ q), e.kind)
        for e in retriever.entries
        if e.server == server and e.kind in ("server", "tool")
    ]
    return max(scored)


def test_a_server_scores_its_best_record_maxsim(setup) -> None:
    _, retriever, embedder = setup
    result = retriever.search("railway tickets", DENSE)
    top = result.servers[0]
    assert top.server == "Trains"
    expected, kind = maxsim(retriever, embedder, "Trains", "railway tickets")
    assert top.score == pytest.approx(expected) and top.via == kind == "server"
    assert [t.tool for t in top.tools] == ["get_tickets", "get_stations"]  # its tools, best first
    assert len(result.servers) == 4  # k servers even though one server owns most matching records


def test_a_tool_hit_lifts_its_server(setup) -> None:
    _, retriever, embedder = setup
    top = retriever.search("station codes", DENSE).servers[0]
    assert (top.server, top.via) == ("Trains", "tool")  # "railway tickets" shares no word with it
    assert top.tools[0].tool == "get_stations"
    assert top.score == pytest.approx(maxsim(retriever, embedder, "Trains", "station codes")[0])


def test_servers_take_their_best_intent(setup) -> None:
    _, retriever, embedder = setup
    query = "rain forecast, train tickets"
    result = retriever.search(query, RetrievalOptions(k=2, bm25_weight=0.0, decompose="rules"))
    assert result.intents == [query, "rain forecast", "train tickets"]
    hits = {hit.server: hit for hit in result.servers}
    assert set(hits) == {"Weather", "Trains"}
    assert hits["Weather"].intent == "rain forecast" and hits["Trains"].intent == "train tickets"
    for server, hit in hits.items():
        by_hand = max(maxsim(retriever, embedder, server, intent)[0] for intent in result.intents)
        assert hit.score == pytest.approx(by_hand)
    single = retriever.search(query, RetrievalOptions(k=2, bm25_weight=0.0, decompose="none"))
    assert single.intents == [query] and {h.intent for h in single.servers} == {query}


def test_tools_rank_across_servers_and_ambiguous_names_keep_their_owner(setup) -> None:
    _, retriever, _ = setup
    result = retriever.search("write file text", DENSE)
    assert [(t.server, t.tool) for t in result.tools[:2]] == [
        ("Editor", "write_file"),
        ("Files", "write_file"),
    ]
    assert result.servers[0].server == "Editor"


def test_bm25_only_and_single_vector_modes(setup) -> None:
    _, retriever, _ = setup
    assert (
        retriever.search("disk", RetrievalOptions(k=1, dense=False, decompose="none")).servers[0].server
        == "Files"
    )
    single = retriever.search("seats", RetrievalOptions(k=1, kinds=frozenset({"summary"}), decompose="none"))
    assert single.servers[0].via == "summary" and single.tools == []  # no tool records in this mode


def test_rule_decomposition_and_implied_needs() -> None:
    assert rule_intents("Find hotels in Paris and book a train, then save it.") == [
        "Find hotels in Paris",
        "book a train",
        "save it",
    ]
    assert rule_intents("Weather?") == ["Weather?"]
    assert implicit_intents("book a hotel for tomorrow") == [IMPLICIT_NEEDS["time"]]
    assert implicit_intents("save the summary to /root/notes/a.md") == [IMPLICIT_NEEDS["write"]]
    assert implicit_intents("what changed in /root/txt/log.txt") == [IMPLICIT_NEEDS["read"]]
    assert implicit_intents("the capital of France") == []
    assert decompose("a b and c d", "none") == ["a b and c d"]
    assert decompose("a b and c d", keep_query=False) == ["a b", "c d"]


def test_llm_decomposition_falls_back_to_the_rules() -> None:
    def broken(_: list[dict[str, str]]) -> str:
        raise ConnectionError("endpoint down")

    rules = rule_intents("find flights to Rome and a hotel near the station")
    assert llm_intents("find flights to Rome and a hotel near the station", broken) == rules
    assert llm_intents("find flights to Rome and a hotel near the station", lambda _: "no JSON here") == rules
    assert (
        llm_intents("find flights to Rome and a hotel near the station", lambda _: '{"tasks": []}') == rules
    )


def test_llm_decomposition_through_an_openai_endpoint() -> None:
    reply = {"tasks": ["book flight to Shanghai", "find restaurants in Shanghai"]}
    with fake_openai([("Deconstruct the user query", reply)]) as server:
        chat = openai_chat(server.url, "fake")
        intents = decompose("Fly me to Shanghai and find food", "llm", chat=chat)
        tomorrow = decompose("Fly me to Shanghai tomorrow and find food", "llm", chat=chat)
    assert intents == ["Fly me to Shanghai and find food", *reply["tasks"]]
    # the rules' implied needs are added to the model's split (the 1.5B leaves them out)
    assert tomorrow == ["Fly me to Shanghai tomorrow and find food", *reply["tasks"], IMPLICIT_NEEDS["time"]]


def test_augmentation_is_generated_hot_cached_by_description_and_indexed(tmp_path: Path) -> None:
    weather = CatalogServer("Weather", "weather forecast rain")
    catalog = Catalog({"Weather": weather, "Files": CatalogServer("Files", "local disk")})
    queries = ["do I need an umbrella", "will it snow in Oslo"]
    with fake_openai([("generate 2 diverse", queries)]) as server:
        chat = openai_chat(server.url, "fake", temperature=1.2)
        report = augment(catalog, chat, n=2, root=tmp_path)
        assert sorted(report.generated) == ["Files", "Weather"] and not report.failed
        assert {body["temperature"] for body in server.bodies} == {1.2}
        again = augment(catalog, chat, n=2, root=tmp_path)
        assert sorted(again.cached) == ["Files", "Weather"] and len(server.bodies) == 2  # no new calls
        changed = Catalog({"Weather": CatalogServer("Weather", "weather forecast rain and snow")})
        assert augment(changed, chat, n=2, root=tmp_path).generated == ["Weather"]  # new text, new queries
    assert json.loads(cache_path(weather, tmp_path).read_text())["queries"] == queries

    synthetic = cached_queries(catalog, tmp_path)
    assert synthetic["Weather"] == queries
    embedder = BagOfWordsEmbedder()
    index = open_tool_index(
        catalog, store=IndexStore(tmp_path / "index"), embedder=embedder, synthetic=synthetic
    )
    retriever = ToolRetriever(index)
    augmented = RetrievalOptions(k=1, bm25_weight=0.0, decompose="none", kinds=record_kinds(True))
    top = retriever.search("umbrella", augmented).servers[0]
    assert (top.server, top.via) == ("Weather", "query")
    limited = replace(augmented, k=2, synthetic_limit=0)
    assert all(hit.via != "query" for hit in retriever.search("umbrella", limited).servers)


def test_a_failed_generation_is_reported_and_the_rest_go_on(tmp_path: Path) -> None:
    catalog = Catalog({"A": CatalogServer("A", "alpha"), "B": CatalogServer("B", "beta")})
    with fake_openai([("A: alpha", "sorry, no"), ("B: beta", ["beta query"])]) as server:
        report = augment(catalog, openai_chat(server.url, "fake"), n=1, root=tmp_path)
    assert report.generated == ["B"] and list(report.failed) == ["A"]


def test_scores_are_deterministic(setup) -> None:
    _, retriever, _ = setup
    first = retriever.search("write file", RetrievalOptions(k=4))
    second = retriever.search("write file", RetrievalOptions(k=4))
    assert [(h.server, h.score) for h in first.servers] == [(h.server, h.score) for h in second.servers]
    assert np.isfinite([h.score for h in first.servers]).all()


def test_what_a_small_model_writes_hot_is_salvaged_and_prose_is_not() -> None:
    from tools.catalog.augment import parse_queries

    escaped_and_cut = (
        "[&#34;What is the EUR to USD rate today?&#34;, &#34;Rates from Norges Bank&#34;, &#34;Can yo"
    )
    assert parse_queries(escaped_and_cut) == ["What is the EUR to USD rate today?", "Rates from Norges Bank"]
    stray_brace = '[{"How to cook: get all recipes","what should I eat today?","Ho'
    assert parse_queries(stray_brace) == ["How to cook: get all recipes", "what should I eat today?"]
    assert parse_queries(
        '{"queries": ["find a paper on GANs", "find a paper on GANs", "list categories"]}'
    ) == [
        "find a paper on GANs",
        "list categories",
    ]
    assert parse_queries('To help you I need "more details" about the tool') == []


def test_augmentation_asks_a_schema_endpoint_for_the_queries_object(tmp_path: Path) -> None:
    from tools.catalog.augment import queries_format

    catalog = Catalog({"Weather": CatalogServer("Weather", "weather forecast rain")})
    with fake_openai([("Weather", {"queries": ["rain in Oslo tomorrow?"]})]) as server:
        chat = openai_chat(server.url, "fake", temperature=1.2, response_format=queries_format(1))
        report = augment(catalog, chat, n=1, root=tmp_path)
        assert report.generated == ["Weather"]
        sent = server.bodies[0]["response_format"]
        assert sent == queries_format(1) and sent["schema"]["properties"]["queries"]["minItems"] == 1
    with fake_openai([("Weather", ["x y z w v u"])]) as plain:
        openai_chat(plain.url, "fake")([{"role": "user", "content": "Weather"}])
        assert "response_format" not in plain.bodies[0]


def test_bm25_statistics_come_from_the_records_in_use(tmp_path: Path) -> None:
    """Masking the synthetic queries scores exactly as an index built without them (IDF, mean length)."""
    catalog = Catalog(
        {
            "Weather": CatalogServer("Weather", "weather forecast rain"),
            "Files": CatalogServer("Files", "local disk files"),
        }
    )
    synthetic = {"Weather": ["rain rain in Oslo", "forecast for Oslo"], "Files": ["files on my disk"]}
    embedder = BagOfWordsEmbedder()
    with_queries = ToolRetriever(
        open_tool_index(catalog, store=IndexStore(tmp_path / "a"), embedder=embedder, synthetic=synthetic)
    )
    without = ToolRetriever(open_tool_index(catalog, store=IndexStore(tmp_path / "b"), embedder=embedder))
    plain = RetrievalOptions(kinds=frozenset({"server", "summary"}), decompose="none")
    for query in ("rain forecast", "disk files Oslo"):
        _, masked = with_queries.scores([query], plain)
        _, clean = without.scores([query], plain)
        kept = [e.kind != "query" for e in with_queries.entries]
        assert np.allclose(masked[:, kept], clean) and not masked[:, [not k for k in kept]].any()
        _, all_records = with_queries.scores(
            [query], RetrievalOptions(kinds=frozenset({"server", "summary", "query"}))
        )
        assert not np.allclose(all_records[:, kept], clean)  # the queries change the statistics


def test_an_implied_need_puts_forward_only_its_best_server(setup) -> None:
    """The implied write need lifts one file server, not both, so the query's own need keeps its slot."""
    _, retriever, _ = setup
    query = "save the forecast to /root/notes/a.md"
    options = RetrievalOptions(k=2, bm25_weight=0.0)
    result = retriever.search(query, options)
    assert IMPLICIT_NEEDS["write"] in result.intents
    assert [h.server for h in result.servers] == ["Files", "Weather"]
    open_needs = retriever.search(query, RetrievalOptions(k=2, bm25_weight=0.0, implicit_servers=None))
    assert [h.server for h in open_needs.servers] == ["Files", "Editor"]  # the forecast lost its slot
    explicit = retriever.search(
        "rain forecast, write it to /root/a.md", RetrievalOptions(k=3, bm25_weight=0.0)
    )
    assert [h.server for h in explicit.servers] == ["Weather", "Files", "Editor"]  # stated, not implied


def test_synthetic_queries_are_retrieved_over_only_when_asked() -> None:
    assert record_kinds(synthetic_queries=False) == DEFAULT_KINDS == frozenset({"server", "tool"})
    assert record_kinds(synthetic_queries=True) == DEFAULT_KINDS | {"query"}
    assert load_settings(env={}).tool_synthetic_queries is False
    assert load_settings(env={"AISEARCH_TOOL_SYNTHETIC_QUERIES": "1"}).tool_synthetic_queries is True
