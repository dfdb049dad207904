"""``aisearch bench dag``: the same plan executed wave-parallel and strictly one task at a time
(TURA Table 6: DAG execution against sequential execution on parallelisable queries).

Questions: the HotpotQA dev comparisons whose entities ``agents.compare.comparison_of`` names (two
or three): a lookup per entity depends on no other, so their plan can run in parallel.

Each question goes through the real graph over the pooled corpus:

1. the Master reads it, and the bench puts it on the Planner route whatever the Master chose (the
   Master's update is replaced by ``Command(goto="select_tools")`` with ``route = "planner"``);
2. tool selection and the Planner write the plan (not streamed: no task may start before the
   fork), and the run stops before ``dispatch``;
3. from that checkpoint the run is resumed twice, a fork each time, so both see the same state and
   the same plan: once with ``budgets.max_parallel`` at the parallel cap (ready tasks go out as
   ``Send`` branches, a wave at a time), once with ``max_parallel = 1`` (one task at a time). The
   order alternates between questions, and neither mode reads a cache (``mode_runs``).

Per run: the **execution phase** is the wall time from the resume to the end of the last task
(dispatches, tasks, reviews and any re-plan); **end to end** is the shared prefix (Master, tool
selection, plan) plus the whole resumed run, the Writer included; **success** is the exact match
of the short answer (``evals.metrics.exact_match``); the **critical path** is the longest chain of
the executed plan's DAG, each task weighted by its duration in that run. **Scheduling
efficiency** = critical path / execution phase of the parallel run (1.0: the waves cost nothing
beyond their slowest chain); ``uncontended_efficiency`` weighs the chain with the sequential run's
durations instead, so that tasks slowed down by running at once (one model server) count as loss.
The **first-wave speed-up** compares the plan's first wave alone (the lookups that depend on
nothing): the sum of their durations one at a time over their span at once, free of the re-plans
that make one run of a question longer than the other.

Each question is also answered by same-model RAG (``evals.baseline.Baselines.rag``, not reading a
cached prompt either), after both modes: ``rag_p50_s``, ``rag_success`` and
``end_to_end_vs_rag`` (the parallel mode's end-to-end P50 over RAG's) put the Planner route's
latency beside the baseline it must stay within a few times of. With ``--prompt-cache`` the prefix
and RAG read the model server's prompt cache as ``aisearch ask`` does (the Planner's rules and
worked example are then read once, not per question); the two modes still do not.

Before the first question every role's model is asked for one token and a question of its own
(:data:`WARM_UP_QUESTION`, not in the set) goes through the prefix (:func:`warm_up`): RAG always
runs after the team, on loaded models and an open index, so a model's load or a tool server's
start is nobody's latency.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agents.compare import comparison_of
from bench.dag_report import MODES, ratio, summarise
from bench.machine import machine_line
from core.plan import Plan
from core.run import ModelProvider, Run, RunContext
from core.settings import Settings
from core.state import InputState
from evals.baseline import Baselines
from evals.metrics import exact_match
from evals.qa_data import read_jsonl
from evals.run_dirs import code_version
from graph.builder import SearchGraph, build_graph
from models.config import ROLES, Role
from models.errors import MODEL_ERRORS, describe_model_error

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "hotpotqa" / "dev.jsonl"
CORPUS = DATA.with_name("corpus.jsonl")
WARM_UP_QUESTION = "Which is older, the Eiffel Tower or the Statue of Liberty?"  # not a dev question


def parallelisable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The comparison questions whose entities the comparison rules name (a lookup each)."""
    return [row for row in rows if row.get("type") == "comparison" and comparison_of(row["question"])]


def load_questions(path: Path, n: int | None) -> list[dict[str, Any]]:
    """The first ``n`` parallelisable questions of a HotpotQA-format file."""
    questions = parallelisable(read_jsonl(path))
    if not questions:
        raise ValueError(f"{path} holds no comparison question whose entities can be named")
    return questions[:n] if n is not None else questions


def mode_settings(settings: Settings, max_parallel: int) -> Settings:
    """The settings of one execution mode: the same budgets but ``max_parallel``, the plan not
    streamed, and room for a wave per task (one at a time takes as many waves as tasks)."""
    budgets = settings.budgets
    waves = max(budgets.max_waves, budgets.max_tasks * (budgets.max_replans + 1))
    bounded = budgets.model_copy(update={"max_parallel": max_parallel, "max_waves": waves})
    return settings.model_copy(update={"budgets": bounded, "stream_plan": False})


def uncached(models: ModelProvider) -> ModelProvider:
    """``models`` whose requests ask the server not to reuse a cached prompt (llama.cpp's
    ``cache_prompt: false``; other OpenAI-compatible servers ignore the field)."""

    def model(role: Role) -> BaseChatModel:
        chat = models(role)
        if not isinstance(chat, ChatOpenAI):
            return chat
        return chat.model_copy(update={"extra_body": {**(chat.extra_body or {}), "cache_prompt": False}})

    return model


def mode_runs(run: Run, parallel_cap: int) -> dict[str, Run]:
    """The open run twice, as the two modes: the same models and tools, other settings, and
    neither cache, so that the mode that runs second finds nothing the first left behind (no
    tool result from the tool-call cache, no prompt already read in the model server's cache)."""
    return {
        mode: dataclasses.replace(
            run,
            settings=mode_settings(run.settings, cap),
            models=uncached(run.models),
            tool_cache=None,
            _cache={},
        )
        for mode, cap in (("parallel", parallel_cap), ("sequential", 1))
    }


def prefix_run(run: Run, runs: dict[str, Run], prompt_cache: bool) -> Run:
    """The run the shared prefix (Master, tool selection, plan) and same-model RAG go through: the
    parallel mode's, or with ``prompt_cache`` the same with the open run's models, whose requests
    may reuse the server's cached prompt as ``aisearch ask``'s do. The plan is made once for both
    modes, so its cache favours neither."""
    if not prompt_cache:
        return runs["parallel"]
    return dataclasses.replace(runs["parallel"], models=run.models, _cache={})  # its own chat models


async def warm_up(run: Run) -> list[Role]:
    """Ask each role's model for one token, so that no question's timing holds a model's load; the
    roles warmed (a role whose model fails is left to fail where it is timed, with its error)."""
    warmed: list[Role] = []
    for role in ROLES:
        try:
            await run.model(role).bind(max_tokens=1, temperature=0).ainvoke("Say OK.")
        except MODEL_ERRORS as exc:
            log.warning("warming up the %s model failed (%s)", role, describe_model_error(exc))
            continue
        warmed.append(role)
    return warmed


def critical_path(plan: dict[str, Any], results: dict[str, Any]) -> float:
    """Seconds along the longest chain of the plan's DAG, each task weighted by its duration
    (a task that did not run weighs nothing)."""
    dag = Plan.model_validate(plan)
    finish: dict[str, float] = {}
    for layer in dag.waves():
        for task_id in layer:
            result = results.get(task_id)
            seconds = result["finished_at"] - result["started_at"] if result else 0.0
            parents = [finish[dep] for dep in dag.by_id()[task_id].deps if dep in finish]
            finish[task_id] = seconds + max(parents, default=0.0)
    return max(finish.values(), default=0.0)


def first_wave_speedup(
    waves: list[list[str]], parallel: dict[str, Any], sequential: dict[str, Any]
) -> float | None:
    """The first wave's tasks one after another (the sum of their sequential durations) over the
    same tasks at once (their span in the parallel run): the overlap itself, apart from what the
    re-plans and later waves of either run cost. None when that wave has one task, or a task of it
    did not run in both."""
    first = waves[0] if waves else []
    if len(first) < 2 or not all(tid in parallel and tid in sequential for tid in first):
        return None
    span = max(parallel[t]["finished_at"] for t in first) - min(parallel[t]["started_at"] for t in first)
    one_by_one = sum(sequential[t]["finished_at"] - sequential[t]["started_at"] for t in first)
    return ratio(one_by_one, span)


def overlapping_pairs(results: dict[str, Any]) -> int:
    """How many pairs of tasks ran at the same time."""
    spans = sorted((r["started_at"], r["finished_at"]) for r in results.values())
    return sum(1 for i, (_, end) in enumerate(spans) for start, _ in spans[i + 1 :] if start < end)


async def plan_once(
    graph: SearchGraph, run: Run, question: str, thread: str
) -> tuple[RunnableConfig | None, dict[str, Any]]:
    """Master, tool selection and plan, stopped before ``dispatch``: the fork's config (None when
    no plan came out) and the prefix's timings, route and plan."""
    config = RunnableConfig(configurable={"thread_id": thread})
    context = RunContext(run=run)
    started = time.perf_counter()
    await graph.ainvoke(InputState(query=question), config, context=context, interrupt_after=["master"])
    routed = (await graph.aget_state(config)).values.get("route")
    await graph.aupdate_state(
        config, Command(goto="select_tools", update={"route": "planner"}), as_node="master"
    )
    seen: dict[str, float] = {}
    async for chunk in graph.astream(
        None, config, context=context, interrupt_before=["dispatch"], stream_mode="updates"
    ):
        seen.update(dict.fromkeys(chunk, time.perf_counter()))
    snapshot = await graph.aget_state(config)
    plan = snapshot.values.get("plan") or {"tasks": []}
    info = {
        "master_route": routed,
        "prefix_s": round(time.perf_counter() - started, 3),
        "plan_s": round(seen["plan"] - seen["select_tools"], 3)
        if {"plan", "select_tools"} <= set(seen)
        else None,
        "tasks": len(plan["tasks"]),
        "waves": Plan.model_validate(plan).waves() if plan["tasks"] else [],
        "plan": plan,
    }
    return (snapshot.config if snapshot.next == ("dispatch",) else None), info


async def execute(graph: SearchGraph, run: Run, fork: RunnableConfig, gold: str) -> dict[str, Any]:
    """Resume the run from the fork point with ``run``'s settings; the mode's measurements."""
    started = time.time()
    final = await graph.ainvoke(None, fork, context=RunContext(run=run))
    ended = time.time()
    results = final.get("results") or {}
    last = max((r["finished_at"] for r in results.values()), default=started)
    short = (final.get("answer") or {}).get("short", "")
    return {
        "exec_s": round(last - started, 3),
        "run_s": round(ended - started, 3),
        "critical_path_s": round(critical_path(final.get("plan") or {"tasks": []}, results), 3),
        "overlapping_pairs": overlapping_pairs(results),
        "em": exact_match(short, gold),
        "short": short,
        "tasks": {
            tid: {
                "tool": r["tool"],
                "status": r["status"],
                "start_s": round(r["started_at"] - started, 3),
                "seconds": round(r["finished_at"] - r["started_at"], 3),
            }
            for tid, r in results.items()
        },
        "_results": results,
        "_plan": final.get("plan"),
    }


async def answer_with_rag(rag: Baselines, question: dict[str, Any]) -> dict[str, Any]:
    """Same-model RAG on the question: its wall time and exact match."""
    record = await rag.rag(question["question"])
    short = record["short"]
    return {"s": record["latency_s"], "em": exact_match(short, question["answer"]), "short": short}


async def measure(
    graph: SearchGraph,
    runs: dict[str, Run],
    question: dict[str, Any],
    sequential_first: bool,
    rag: Baselines | None = None,
    prefix: Run | None = None,
) -> dict[str, Any]:
    """One question: plan once (through ``prefix``, by default the parallel mode's run), then run
    the plan in both modes from the same checkpoint (and answer it with ``rag`` when given)."""
    planning = prefix or runs["parallel"]
    fork, info = await plan_once(graph, planning, question["question"], f"bench-dag-{question['id']}")
    row: dict[str, Any] = {"id": question["id"], "question": question["question"], "gold": question["answer"]}
    row |= {key: value for key, value in info.items() if key != "plan"}
    if fork is None:
        row["skipped"] = "the Planner wrote no usable plan (the run went to the Writer)"
        return row
    order = ("sequential", "parallel") if sequential_first else MODES
    for mode in order:
        row[mode] = await execute(graph, runs[mode], fork, question["answer"])
        row[mode]["e2e_s"] = round(info["prefix_s"] + row[mode]["run_s"], 3)
    parallel, sequential = row["parallel"], row["sequential"]
    row["first_wave_speedup"] = first_wave_speedup(
        info["waves"], parallel["_results"], sequential["_results"]
    )
    uncontended = critical_path(parallel["_plan"] or info["plan"], sequential.pop("_results"))
    row["order"] = list(order)
    row["scheduling_efficiency"] = ratio(parallel["critical_path_s"], parallel["exec_s"])
    row["uncontended_efficiency"] = ratio(uncontended, parallel["exec_s"])
    parallel.pop("_results")
    parallel.pop("_plan")
    sequential.pop("_plan")
    if rag is not None:
        row["rag"] = await answer_with_rag(rag, question)
    return row


async def run(
    settings: Settings,
    *,
    n: int | None = 20,
    data: Path = DATA,
    corpus: Path = CORPUS,
    collection: str = "hotpotqa",
    parallel_cap: int | None = None,
    prompt_cache: bool = False,
) -> dict[str, Any]:
    """Index the corpus (or reuse it), open the run, measure every question; the report. With
    ``prompt_cache`` the prefix and RAG may reuse the server's cached prompt (``prefix_run``)."""
    from evals.qa_context import open_context

    questions = load_questions(data, n)
    version = code_version()  # the code measured: the commit at the start, not when it ends
    cap = parallel_cap or settings.budgets.max_parallel
    load_before = os.getloadavg()
    rows = []
    async with open_context(
        settings, corpus=corpus, systems=("aisearch", "rag"), judge=False, collection=collection
    ) as ctx:
        graph = build_graph(checkpointer=InMemorySaver())
        runs = mode_runs(ctx.run, cap)
        prefix = prefix_run(ctx.run, runs, prompt_cache)
        searcher = ctx.baselines.searcher if ctx.baselines else None
        rag = Baselines(prefix.models("writer"), searcher) if searcher else None
        warmed = await warm_up(prefix)
        await plan_once(graph, prefix, WARM_UP_QUESTION, "bench-dag-warm-up")  # tool servers started
        for index, question in enumerate(questions):
            row = await measure(graph, runs, question, index % 2 == 1, rag, prefix)
            log.info("bench dag %s: %s", question["id"], {m: row.get(m, {}).get("exec_s") for m in MODES})
            rows.append(row)
    report = summarise(rows, cap)
    report |= {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_line(),
        "load_average": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "prompt_cache": prompt_cache,
        "warmed_up": {"models": warmed, "prefix": WARM_UP_QUESTION},
        "commit": version["commit"] or "unknown",
        "dirty": version["dirty"],
        "data": str(data),
        "questions": rows,
    }
    return report
