"""Each role on the REAL local models (marked ``local_model``): schema-valid output for a handful of
inputs, executor tool calls on the bundled MCP servers, and the Writer-only and Executor routes
end to end through the graph."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from langchain_core.messages import HumanMessage

from agents.assessment import AssessmentReply, assess_prompt, calibrate, route_for
from agents.plan_prompt import PlanSketch, plan_prompt
from core.plan import validate_plan
from core.run import Run
from core.settings import Settings, load_settings
from models.factory import build_chat_model
from models.local_server import llama_cpp_available
from models.structured import structured_call
from tests.conftest import Team, docsearch_connections, run, server_connections
from tests.support.fakes import MASTER, PLANNER, WRITER, assessment
from tests.test_local_models import LLAMA_CPP_ERROR
from tools.hub import ToolHub
from tools.index.first_run import ensure_default_collection
from tools.index.store import IndexStore

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(not llama_cpp_available(), reason=LLAMA_CPP_ERROR or ""),
    pytest.mark.asyncio(loop_scope="module"),  # langchain-openai caches its HTTP client per event loop
]
TODAY = "Sunday, 2026-11-22 UTC"


@pytest.fixture(scope="module")
def settings(local_model_server: str) -> Settings:
    """Settings whose roles all talk to the local server serving both bundled models, with room
    for a slow day: these tests check behaviour, not speed (the Writer's prompt took over the
    default 180 s on a day the CPU read prompts 5× slower, beside the other test worker)."""
    base = load_settings(env={})
    for role in base.roles.values():
        role.base_url, role.json_schema = local_model_server, True
        role.timeout_s = max(role.timeout_s, 600.0)
    return base


@pytest_asyncio.fixture(loop_scope="module")
async def hub() -> AsyncIterator[ToolHub]:
    async with ToolHub.open(server_connections(with_facts=False)) as opened:
        yield opened


@pytest.mark.parametrize(
    ("query", "route"),
    [
        ("What is the name of Emperor Han-Wu?", "writer_only"),
        ("What time is it in Tokyo now?", "executor"),
        ("Who is elder, Emperor Han-Wu or Emperor Caesar, by how many years?", "planner"),
    ],
)
async def test_master_returns_a_valid_assessment_and_routes_the_paper_examples(
    settings, query, route
) -> None:
    prompt = assess_prompt(TODAY, "(none)", query, "(none)")
    result = await structured_call(
        build_chat_model("master", settings),
        [HumanMessage(prompt)],
        AssessmentReply,
        constrain=True,
        repair=False,
    )
    assert route_for(calibrate(result.value, query)) == route


async def test_planner_writes_a_valid_dag_for_the_comparison(settings, hub) -> None:
    candidates = [spec.brief() for name, spec in hub.specs.items() if name.startswith("python.")]
    prompt = plan_prompt(
        today=TODAY,
        max_tasks=6,
        strategy="parallel",
        candidates=candidates,
        query="Who is elder, Emperor Han-Wu or Emperor Caesar, by how many years?",
    )

    def check(sketch: PlanSketch):
        return validate_plan(
            {"tasks": [t.model_dump() for t in sketch.tasks]},
            candidate_tools=[c["name"] for c in candidates],
            max_tasks=6,
        )

    result = await structured_call(
        build_chat_model("planner", settings), [HumanMessage(prompt)], PlanSketch, check=check, constrain=True
    )  # parse → validate → one repair round, as in the graph
    assert len(result.value.tasks) >= 2


async def test_executor_route_calls_the_calculator_and_writer_cites_it(settings, hub) -> None:
    resources = Run(settings, lambda role: build_chat_model(role, settings), hub)
    state, path, _ = await run(resources, "What is 17 * 23 + 4?")
    assert state["route"] == "executor" and path[-1] == "writer"
    (result,) = state["results"].values()
    assert result["tool"] == "python.calculate" and result["status"] == "ok"
    assert result["tool_calls"][0]["output"].strip() == "395"
    assert "395" in f"{state['answer']['short']} {state['answer']['text']}"


async def test_writer_only_route_answers_end_to_end(settings, hub) -> None:
    resources = Run(settings, lambda role: build_chat_model(role, settings), hub)
    state, path, _ = await run(resources, "What is the name of Emperor Han-Wu?")
    assert path == ["master", "writer"]
    assert state["answer"]["text"] and state["answer"]["basis"] == "model_knowledge"


async def test_executor_writes_a_valid_clock_call(settings, hub) -> None:
    resources = Run(settings, lambda role: build_chat_model(role, settings), hub)
    state, _, _ = await run(resources, "What time is it in Tokyo now?")
    (result,) = state["results"].values()
    assert result["tool"].startswith("clock.") and result["tool_calls"] and result["tool_calls"][0]["ok"]


@pytest_asyncio.fixture(loop_scope="module")
async def stdlib_hub(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ToolHub]:
    """The bundled servers plus docsearch over a first-run default index (json and subprocess docs)."""
    index_dir = tmp_path_factory.mktemp("stdlib-index")
    mp = pytest.MonkeyPatch()
    mp.setenv("AISEARCH_DEFAULT_CORPUS_MODULES", "json,subprocess")
    mp.setenv("AISEARCH_DEFAULT_CORPUS_TOPICS", "0")
    try:
        report = ensure_default_collection(IndexStore(index_dir))
    finally:
        mp.undo()
    assert report is not None and report.passages_total > 10
    async with ToolHub.open(docsearch_connections(index_dir)) as opened:
        opened.index_dir = index_dir  # type: ignore[attr-defined]
        yield opened


async def test_a_standard_library_question_is_searched_and_answered_with_citations(
    settings, stdlib_hub
) -> None:
    resources = Run(settings, lambda role: build_chat_model(role, settings), stdlib_hub)
    # a factual question: its short answer and one cited sentence (an open "How do I ..." question
    # would have the 1.5B write a few paragraphs, minutes of CPU the fake-model tests cover)
    state, path, _ = await run(resources, "Which argument of json.dumps pretty-prints the output?")
    assert state["route"] != "writer_only", (state["assessment"]["probe"], state["assessment"]["escalated"])
    searches = [
        c for r in state["results"].values() for c in r["tool_calls"] if c["tool"] == "docsearch.search"
    ]
    assert searches and all(c["ok"] for c in searches)
    citations = [c for c in state["answer"]["citations"] if c["kind"] == "document"]
    assert citations, state["answer"]["text"]
    stored = (
        IndexStore(stdlib_hub.index_dir)
        .collection("docs")
        .chroma()
        .get(ids=[c["evidence_id"] for c in citations])
    )
    assert len(stored["ids"]) == len({c["evidence_id"] for c in citations}), (
        "citations point at real passages"
    )
    assert any(c["title"] == "json" for c in citations)


@pytest.mark.parametrize("max_parallel", [4, 1])
async def test_two_model_tasks_are_in_flight_at_once_only_in_the_parallel_mode(
    settings, hub, max_parallel
) -> None:
    """Two tool-free tasks, each one call of the real executor model: a wave sends both calls to the
    server at once, ``max_parallel = 1`` one after the other. Whether the server then computes them
    at once is the server's business (llama-cpp-python answers one request at a time)."""
    team = Team()
    query = "What are the capitals of France and of Japan?"
    team["master"].on(MASTER, assessment("complex", "parallel", resolved=query))
    team["planner"].on(
        PLANNER,
        {
            "reasoning": "Two independent facts.",
            "tasks": [
                {
                    "id": "t1",
                    "goal": "The capital of France",
                    "tool": None,
                    "args": {},
                    "deps": [],
                    "returns": "a city",
                },
                {
                    "id": "t2",
                    "goal": "The capital of Japan",
                    "tool": None,
                    "args": {},
                    "deps": [],
                    "returns": "a city",
                },
            ],
        },
    )
    team["writer"].on(WRITER, "Paris and Tokyo [1][2].")
    budgets = settings.budgets.model_copy(update={"max_parallel": max_parallel, "max_replans": 0})
    local = settings.model_copy(update={"routing": "llm", "budgets": budgets})
    executor = build_chat_model("executor", settings)
    resources = Run(local, lambda role: executor if role == "executor" else team[role], hub)

    state, _, _ = await run(resources, query)

    t1, t2 = state["results"]["t1"], state["results"]["t2"]
    assert "failed" not in (t1["status"], t2["status"]), (t1["error"], t2["error"])
    in_flight_together = t1["started_at"] < t2["finished_at"] and t2["started_at"] < t1["finished_at"]
    assert in_flight_together is (max_parallel > 1)
