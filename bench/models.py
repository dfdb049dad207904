"""Benchmark of the embedded local models, per role and end to end (``aisearch bench models``).

Per role it measures one typical call (master assessment, plan, one executor step, writer answer)
``--repeat`` times, streamed, recording time to first token, prompt and generated tokens/s and the
P50/P80 latency; it compares the executor step with and without a written thought (TURA: "train
with thought, infer without thought") on a handful of tool-call items, scoring the arguments; it
times the server's load; and it runs the paper's three example queries through the whole graph.
The prompts are the typical ones of ``bench/role_prompts.py``. ``aisearch bench models`` saves the
report as ``results/bench-models-<date>.json`` and ``.md``.
"""

from __future__ import annotations

import logging
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import httpx
import numpy as np
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam

from agents.assessment import AssessmentReply as Assessment
from agents.plan_prompt import PlanSketch
from bench.machine import machine_line
from bench.role_prompts import QUERY, TOOLS, executor_args_prompt, typical_prompts
from bench.timed_run import timed_run
from core.run import open_run
from core.settings import Settings, load_settings
from core.state import CandidateTool
from models.config import Role
from models.local_server import ensure_server, stop_server
from models.server_revival import NO_KEEPALIVE
from models.structured import extract_json, schema_response_format

log = logging.getLogger(__name__)
EXECUTOR_ITEMS: list[tuple[str, CandidateTool, Callable[[dict[str, Any]], bool]]] = [
    ("What is 17 * 23 + 4?", TOOLS[0], lambda a: _evaluates_to(a.get("expression"), 395)),
    ("What is 15% of 240?", TOOLS[0], lambda a: _evaluates_to(a.get("expression"), 36)),
    ("How many years between 156 BC and 100 BC?", TOOLS[0], lambda a: _evaluates_to(a.get("expression"), 56)),
    ("What time is it in Tokyo now?", TOOLS[2], lambda a: "tokyo" in str(a.get("timezone", "")).lower()),
    ("Current time in London", TOOLS[2], lambda a: "london" in str(a.get("timezone", "")).lower()),
]
ROUTE_QUERIES = [
    ("writer_only", "What is the name of Emperor Han-Wu?"),
    ("executor", "What is 17 * 23 + 4?"),
    ("planner", QUERY),
]


def _evaluates_to(expression: Any, expected: float) -> bool:
    from tools.servers.python_server import calculate

    try:
        return abs(float(calculate(str(expression))) - expected) < 1e-6
    except Exception:  # a wrong or unparseable expression scores 0
        return False


def summarise(samples: list[dict[str, float]]) -> dict[str, float]:
    """Medians of every measure and the P50/P80 of the latency."""
    keys = samples[0].keys()
    summary = {f"{key}_median": round(statistics.median(s[key] for s in samples), 3) for key in keys}
    latencies = [s["latency_s"] for s in samples]
    summary |= {
        "p50_s": round(float(np.percentile(latencies, 50)), 3),
        "p80_s": round(float(np.percentile(latencies, 80)), 3),
        "n": len(samples),
    }
    return summary


async def timed_call(
    client: AsyncOpenAI,
    model: str,
    prompt: str,
    schema: type | None,
    max_tokens: int,
    extra_schema: dict[str, Any] | None = None,
) -> tuple[dict[str, float], str]:
    """One streamed chat call: time to first token, tokens/s, latency; returns the text too."""
    body: dict[str, Any] = {}
    if extra_schema is not None:
        body["response_format"] = extra_schema
    elif schema is not None:
        body["response_format"] = schema_response_format(schema)
    # a unique first line defeats llama.cpp's prompt-prefix cache: every call pays its full prefill
    messages: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": f"Request {uuid.uuid4().hex[:8]}.\n{prompt}"}
    ]
    # the first token of a fresh prompt costs its whole prefill: time a one-token call, then stream the
    # rest of the answer from the (now cached) prompt
    cold = time.perf_counter()
    usage = await client.chat.completions.create(
        model=model, messages=messages, max_tokens=1, extra_body=body
    )
    ttft = time.perf_counter() - cold
    prompt_tokens = usage.usage.prompt_tokens if usage.usage else 0
    start = time.perf_counter()
    first = None
    chunks: list[str] = []
    stream = await client.chat.completions.create(
        model=model, messages=messages, max_tokens=max_tokens, temperature=0, stream=True, extra_body=body
    )
    async for chunk in stream:
        delta = chunk.choices[0].delta.content if chunk.choices else None
        if delta:
            first = first or time.perf_counter()
            chunks.append(delta)
    end = time.perf_counter()
    first = first or end
    generated = max(len(chunks), 1)
    return {
        "latency_s": ttft + (end - start),
        "ttft_s": ttft,
        "prompt_tokens": float(prompt_tokens),
        "generated_tokens": float(generated),
        "prompt_tok_per_s": prompt_tokens / max(ttft, 1e-6),
        "gen_tok_per_s": (generated - 1) / max(end - first, 1e-6) if generated > 1 else 0.0,
    }, "".join(chunks)


def role_prompts() -> dict[Role, tuple[str, type | None, int]]:
    """The typical call of each role: prompt, output schema, token limit."""
    prompts = typical_prompts()
    return {
        "master": (prompts["master"], Assessment, 160),
        "planner": (prompts["planner"], PlanSketch, 400),
        "executor": (prompts["executor_args"], None, 40),
        "writer": (prompts["writer"], None, 200),
    }


def executor_schema(tool: CandidateTool, with_thought: bool) -> dict[str, Any]:
    """The JSON schema of an executor step, optionally with a ``thought`` field written first."""
    args = {
        "type": "object",
        "properties": {k: {"type": v} for k, v in tool["args"].items()},
        "required": list(tool["args"]),
    }
    if not with_thought:
        return {"type": "json_object", "schema": args}
    return {
        "type": "json_object",
        "schema": {
            "type": "object",
            "properties": {"thought": {"type": "string"}, "arguments": args},
            "required": ["thought", "arguments"],
        },
    }


async def executor_thought_comparison(client: AsyncOpenAI, model: str) -> dict[str, Any]:
    """Executor step latency and argument accuracy with vs without a written thought."""
    report: dict[str, Any] = {}
    for with_thought in (False, True):
        samples, correct = [], 0
        for goal, tool, check in EXECUTOR_ITEMS:
            prompt = executor_args_prompt(goal, tool)
            if with_thought:
                prompt += '\nFirst think step by step in "thought", then give "arguments".'
            sample, text = await timed_call(
                client, model, prompt, None, 160 if with_thought else 40, executor_schema(tool, with_thought)
            )
            samples.append(sample)
            try:
                value = extract_json(text)
                args = value.get("arguments", {}) if with_thought else value
                correct += bool(check(args))
            except Exception:  # unparseable output scores 0
                pass
        report["with_thought" if with_thought else "without_thought"] = {
            **summarise(samples),
            "accuracy": round(correct / len(EXECUTOR_ITEMS), 3),
        }
    return report


async def end_to_end(settings: Settings) -> list[dict[str, Any]]:
    """The paper's three example queries through the whole graph on the local models."""
    rows = []
    async with open_run(settings) as opened:
        for expected, query in ROUTE_QUERIES:
            state, seconds, first_token = await timed_run(opened, query, expected)
            results = state.get("results", {}).values()
            rows.append(
                {
                    "query": query,
                    "expected_route": expected,
                    "route": state.get("route"),
                    "seconds": round(seconds, 2),
                    "time_to_first_answer_token_s": round(first_token, 2) if first_token else None,
                    "tasks": [
                        {
                            "id": r["task_id"],
                            "tool": r["tool"],
                            "status": r["status"],
                            "seconds": round(r["finished_at"] - r["started_at"], 2),
                        }
                        for r in results
                    ],
                    "answer": (state.get("answer") or {}).get("text", ""),
                }
            )
    return rows


async def run(repeat: int, routes: bool) -> dict[str, Any]:
    """Measure everything; return the report."""
    settings = load_settings()
    stop_server()
    start = time.perf_counter()
    base_url = ensure_server(settings)
    load_s = time.perf_counter() - start
    # openai takes an httpx client as well as its own httpx2 one (its types name only the latter)
    http_client = cast(Any, httpx.AsyncClient(limits=NO_KEEPALIVE))
    client = AsyncOpenAI(base_url=base_url, api_key="local", http_client=http_client)
    roles: dict[str, Any] = {}
    for role, (prompt, schema, max_tokens) in role_prompts().items():
        model = settings.role(role).model
        samples = [(await timed_call(client, model, prompt, schema, max_tokens))[0] for _ in range(repeat)]
        roles[role] = {"model": model, **summarise(samples)}
    report: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_line(),
        "threads": settings.local.n_threads,
        "n_ctx": settings.local.n_ctx,
        "server_load_s": round(load_s, 2),
        "roles": roles,
        "executor_thought": await executor_thought_comparison(client, settings.role("executor").model),
    }
    if routes:
        report["routes"] = await end_to_end(settings)
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables."""
    lines = [
        f"# Local model benchmark ({report['date']}, {report['machine']}, n_threads={report['threads']})",
        "",
        f"Server start to healthy (both models loaded): {report['server_load_s']} s",
        "",
        "| role | model | prompt tok | TTFT s | prompt tok/s | gen tok/s | P50 s | P80 s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for role, r in report["roles"].items():
        lines.append(
            f"| {role} | {r['model']} | {r['prompt_tokens_median']:.0f} | {r['ttft_s_median']:.2f} | "
            f"{r['prompt_tok_per_s_median']:.0f} | {r['gen_tok_per_s_median']:.1f} | {r['p50_s']:.2f} | "
            f"{r['p80_s']:.2f} |"
        )
    lines += ["", "| executor step | accuracy | P50 s | P80 s | generated tok |", "|---|---|---|---|---|"]
    for name, r in report["executor_thought"].items():
        lines.append(
            f"| {name.replace('_', ' ')} | {r['accuracy']:.2f} | {r['p50_s']:.2f} | {r['p80_s']:.2f} | "
            f"{r['generated_tokens_median']:.0f} |"
        )
    if report.get("routes"):
        lines += ["", "| query | route | seconds | first answer token s | tasks |", "|---|---|---|---|---|"]
        for row in report["routes"]:
            tasks = ", ".join(f"{t['id']}:{t['tool'] or 'model'}:{t['status']}" for t in row["tasks"]) or "-"
            lines.append(
                f"| {row['query']} | {row['route']} | {row['seconds']} | "
                f"{row['time_to_first_answer_token_s']} | {tasks} |"
            )
    return "\n".join(lines) + "\n"
