"""``aisearch bench dag``: one plan, forked from one checkpoint, run wave-parallel and one task at a
time; its measures and its JSON contract.

The runs go through the real graph with scripted models over real stdio MCP servers (the sleepy
test server's lookups take 0.5 s each, and report when they ran).
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from app.cli import main
from bench.dag import (
    critical_path,
    load_questions,
    measure,
    mode_runs,
    overlapping_pairs,
    prefix_run,
    warm_up,
)
from bench.dag_report import summarise
from evals.baseline import Baselines
from graph.builder import build_graph
from models.factory import CompatibleChatOpenAI
from models.structured import structured_call
from tests.conftest import HOTPOT_FIXTURE, Team, make_settings
from tests.support.fake_openai import fake_openai
from tests.support.fakes import ScriptedChatModel
from tests.support.sleepy_plan import ANSWER, QUERY, scripted
from tools.cache.tool_calls import ToolCallCache
from tools.hub import ToolHub
from tools.index.search import Searcher
from tools.index.store import IndexStore

CONTRACT = (
    "n",
    "parallel_p50_s",
    "sequential_p50_s",
    "speedup",
    "end_to_end_speedup",
    "parallel_success",
    "sequential_success",
    "scheduling_efficiency",
)


def test_the_critical_path_follows_the_longest_chain_weighted_by_durations() -> None:
    plan = {
        "tasks": [
            {"id": "a", "goal": "a"},
            {"id": "b", "goal": "b"},
            {"id": "c", "goal": "c", "deps": ["a", "b"]},
        ]
    }
    results = {
        "a": {"started_at": 0.0, "finished_at": 1.0},
        "b": {"started_at": 0.0, "finished_at": 3.0},
        "c": {"started_at": 3.0, "finished_at": 3.5},
    }
    assert critical_path(plan, results) == 3.5  # b then c, not a + b + c
    assert critical_path(plan, {"a": results["a"]}) == 1.0  # tasks that did not run weigh nothing
    assert overlapping_pairs(results) == 1  # a and b


def test_only_comparisons_whose_entities_can_be_named_are_asked(tmp_path) -> None:
    rows = [
        {
            "id": "1",
            "question": "Which came first, Wavves or Social Code?",
            "answer": "x",
            "type": "comparison",
        },
        {"id": "2", "question": "What do Wavves and Social Code share?", "answer": "x", "type": "comparison"},
        {"id": "3", "question": "Who directed Wavves?", "answer": "x", "type": "bridge"},
    ]
    path = tmp_path / "dev.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows))
    assert [q["id"] for q in load_questions(path, None)] == ["1"]
    path.write_text(json.dumps(rows[2]))
    with pytest.raises(ValueError, match="no comparison question"):
        load_questions(path, None)


@pytest.mark.parametrize("sequential_first", [False, True])
@pytest.mark.slow
async def test_the_same_plan_runs_wave_parallel_and_one_task_at_a_time(
    sleepy_hub: ToolHub, hotpot_index, sequential_first: bool
) -> None:
    team = scripted(Team(), seconds=0.5)
    run = team.resources(sleepy_hub, make_settings())
    graph = build_graph(checkpointer=InMemorySaver())
    reader = ScriptedChatModel().on("short phrase only", "Julius Caesar")
    rag = Baselines(reader, Searcher(IndexStore(hotpot_index).require("docs")))

    row = await measure(
        graph, mode_runs(run, 4), {"id": "q1", "question": QUERY, "answer": ANSWER}, sequential_first, rag
    )

    assert len(team["planner"].calls) == 1  # planned once: both modes run the plan of one checkpoint
    assert row["waves"] == [["t1", "t2"], ["t3"]] and row["plan_s"] is not None
    assert row["order"] == (["sequential", "parallel"] if sequential_first else ["parallel", "sequential"])
    parallel, sequential = row["parallel"], row["sequential"]
    for mode in (parallel, sequential):
        assert {tid: task["status"] for tid, task in mode["tasks"].items()} == {
            "t1": "ok",
            "t2": "ok",
            "t3": "ok",
        }
        assert mode["em"] == 1.0
        assert mode["e2e_s"] > mode["exec_s"]  # the prefix and the Writer come on top
    assert parallel["overlapping_pairs"] == 1  # the two lookups at once
    assert sequential["overlapping_pairs"] == 0  # never two tasks at once
    durations = sum(task["seconds"] for task in parallel["tasks"].values())
    assert parallel["critical_path_s"] < durations  # t1 and t2 are not on one chain
    assert 0 < row["scheduling_efficiency"] <= 1.0 + 1e-3
    assert row["first_wave_speedup"] > 1.5  # two 0.5 s lookups at once against one after the other

    report = summarise([row], 4)
    assert set(CONTRACT) <= set(report)
    assert report["n"] == 1 and report["parallel_success"] == report["sequential_success"] == 1.0
    assert report["sequential_overlaps"] == 0 and report["parallel_plans"] == 1
    assert report["first_wave_speedup"] == row["first_wave_speedup"]
    # same-model RAG answered the same question, after both modes: its time beside theirs
    assert row["rag"]["short"] == "Julius Caesar" and row["rag"]["em"] == 0.0 and row["rag"]["s"] > 0
    assert report["rag_p50_s"] == row["rag"]["s"] and report["rag_success"] == 0.0
    assert report["end_to_end_vs_rag"] == round(parallel["e2e_s"] / row["rag"]["s"], 3)


class Verdict(BaseModel):
    ok: bool


async def test_neither_mode_reads_a_cache_the_other_filled(tmp_path, sleepy_hub: ToolHub) -> None:
    """The mode that runs second would find the first one's searches in the tool-call cache and
    its prompts in the model server's prompt cache: both modes run without either."""
    with fake_openai([("Is it ok?", '{"ok": true}')]) as server:
        run = Team().resources(sleepy_hub, make_settings())
        run.models = lambda role: CompatibleChatOpenAI(
            model="fake", base_url=server.url, api_key="x", timeout=5, max_retries=0
        )
        run.tool_cache = ToolCallCache(tmp_path / "tool_cache.sqlite")
        runs = mode_runs(run, 4)
        assert runs["parallel"].settings.budgets.max_parallel == 4
        assert runs["sequential"].settings.budgets.max_parallel == 1
        for mode in runs.values():
            assert mode.tool_cache is None
            await mode.model("executor").ainvoke([HumanMessage(content="Is it ok?")])
            await structured_call(mode.model("executor"), [HumanMessage(content="Is it ok?")], Verdict)
        await run.model("executor").ainvoke([HumanMessage(content="Is it ok?")])

    assert run.tool_cache is not None  # the open run keeps its caches for the prefix
    *modes, opened = server.bodies
    assert len(modes) == 4 and all(body["cache_prompt"] is False for body in modes)
    assert all("response_format" in body for body in modes[1::2])  # a constrained call keeps both
    assert "cache_prompt" not in opened


async def test_with_the_prompt_cache_only_the_prefix_reads_it(sleepy_hub: ToolHub) -> None:
    with fake_openai([("Is it ok?", '{"ok": true}')]) as server:
        run = Team().resources(sleepy_hub, make_settings())
        run.models = lambda role: CompatibleChatOpenAI(
            model="fake", base_url=server.url, api_key="x", timeout=5, max_retries=0
        )
        runs = mode_runs(run, 4)
        for prompt_cache in (True, False):
            prefix = prefix_run(run, runs, prompt_cache)
            assert prefix.settings.budgets.max_parallel == 4 and prefix.tool_cache is None
            await prefix.model("planner").ainvoke([HumanMessage(content="Is it ok?")])
        await runs["parallel"].model("executor").ainvoke([HumanMessage(content="Is it ok?")])

    cached, cold, mode = server.bodies
    assert "cache_prompt" not in cached, "the plan reads the prompt cache as `aisearch ask` does"
    assert cold["cache_prompt"] is False and mode["cache_prompt"] is False


async def test_every_roles_model_is_warmed_before_the_first_question(sleepy_hub: ToolHub) -> None:
    with fake_openai([("Say OK.", "OK")]) as server:
        run = Team().resources(sleepy_hub, make_settings())

        def models(role: str) -> CompatibleChatOpenAI:
            url = "http://127.0.0.1:9/v1" if role == "executor" else server.url  # nothing listens on 9
            return CompatibleChatOpenAI(model=role, base_url=url, api_key="x", timeout=5, max_retries=0)

        run.models = models  # type: ignore[assignment]
        warmed = await warm_up(run)

    assert warmed == ["master", "planner", "writer", "reader"], (
        "a model that cannot answer is left to fail where timed"
    )
    assert [body["model"] for body in server.bodies] == ["master", "planner", "writer", "reader"]
    assert all(body["max_tokens"] == 1 for body in server.bodies), "one token: the load, not a reply"


def test_a_bad_question_file_is_one_line_of_error(tmp_path, capsys) -> None:
    assert main(["bench", "dag", "--data", str(tmp_path / "missing.jsonl")]) == 2
    assert "question file not found" in capsys.readouterr().err
    assert main(["bench", "dag", "--n", "0", "--data", str(HOTPOT_FIXTURE / "dev.jsonl")]) == 2
    assert "--n must be at least 1" in capsys.readouterr().err
