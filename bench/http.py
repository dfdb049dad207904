"""Load test of the HTTP app: ``aisearch serve`` on loopback, a scripted model with a fixed delay.

``python -m bench.http --requests 200 --concurrency 16 --delay 0.05`` starts the scripted
OpenAI-compatible endpoint of the tests (``tests/support/fake_openai.py``: run it from the
repository), then ``aisearch serve`` as a subprocess on a free port with a fresh SQLite thread
store (``--store postgres``: a throwaway Postgres, ``tests/support/postgres.py``; repeat
``--store`` to compare), and sends the requests as conversations: ``requests / turns`` threads
of ``turns`` turns each (turn 1 ``POST /invoke`` with a client-chosen thread id, the middle turns
``POST /conversations/{id}/invoke``, the last ``POST /conversations/{id}/stream``), the turns of a
thread in order and at most ``concurrency`` requests in flight. Afterwards every thread's state
and history are read back: each thread must hold exactly its own questions, in order, each once,
with one answer per turn. Throughput, P50/P95 latency and errors go to stdout and, with ``--out``,
to a Markdown report.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.machine import machine_line
from bench.server import ServeError, serving

TOKYO = "What time is it in Tokyo now?"


def _rules() -> list[tuple[str | tuple[str, ...], Any]]:
    from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, WRITER, assessment

    return [
        (MASTER, assessment("moderate", resolved=TOKYO, intent="current time")),
        (EXEC_ARGS, {"timezone": "Asia/Tokyo"}),
        (EXEC_JUDGE, {"sufficient": True, "result": "18:00 in Tokyo"}),
        ("say why", "The clock server says so [1]."),
        (WRITER, "18:00"),
    ]


@dataclass
class Tally:
    """Latencies of the requests that succeeded, and what went wrong with the others."""

    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _question(thread: int, turn: int) -> str:
    return f"{TOKYO} (thread {thread}, turn {turn})"


async def _turn(client: httpx.AsyncClient, thread_id: str, thread: int, turn: int, last: bool) -> str | None:
    """One request; None when it answered, else what went wrong."""
    configurable: dict[str, str] = {}
    body = {
        "input": {"query": _question(thread, turn)},
        "config": {"configurable": configurable},
        "kwargs": {},
    }
    if turn == 0:
        configurable["thread_id"] = thread_id
        response = await client.post("/invoke", json=body)
    elif not last:
        response = await client.post(f"/conversations/{thread_id}/invoke", json=body)
    else:
        async with client.stream("POST", f"/conversations/{thread_id}/stream", json=body) as response:
            text = (await response.aread()).decode()
        if response.status_code != 200:
            return f"stream {response.status_code}"
        events = [line[6:].strip() for line in text.splitlines() if line.startswith("event:")]
        if "error" in events or events[-1:] != ["end"]:
            return "stream did not end cleanly"
        return None if '"event": "answer"' in text else "stream without an answer"
    if response.status_code != 200:
        return f"{response.status_code} {response.text[:200]}"
    return None if response.json()["output"]["answer"]["short"] == "18:00" else "wrong answer"


async def _conversation(
    client: httpx.AsyncClient, thread: int, turns: int, slots: asyncio.Semaphore, tally: Tally
) -> None:
    thread_id = f"load-{thread:04d}"
    for turn in range(turns):
        async with slots:
            started = time.perf_counter()
            problem = await _turn(client, thread_id, thread, turn, last=turn == turns - 1 and turns > 1)
            elapsed = time.perf_counter() - started
        if problem:
            tally.errors.append(f"{thread_id} turn {turn}: {problem}")
        else:
            tally.seconds.append(elapsed)


async def _check_threads(client: httpx.AsyncClient, threads: int, turns: int) -> list[str]:
    """What is wrong with the stored threads: lost, duplicated or foreign turns, missing answers."""
    problems = []
    for thread in range(threads):
        thread_id = f"load-{thread:04d}"
        state = await client.get(f"/conversations/{thread_id}/state")
        if state.status_code != 200:
            problems.append(f"{thread_id}: state {state.status_code}")
            continue
        messages = state.json()["values"]["messages"]
        asked = [m["content"] for m in messages if m["type"] == "human"]
        answers = [m for m in messages if m["type"] == "ai"]
        if asked != [_question(thread, turn) for turn in range(turns)] or len(answers) != turns:
            problems.append(f"{thread_id}: {len(asked)} questions, {len(answers)} answers")
        history = await client.get(f"/conversations/{thread_id}/history", params={"limit": 1000})
        inputs = [c["source"] for c in history.json()["checkpoints"]].count("input")
        if inputs != turns:
            problems.append(f"{thread_id}: {inputs} input checkpoints for {turns} turns")
    return problems


async def _load(url: str, requests: int, concurrency: int, turns: int) -> tuple[Tally, float, list[str]]:
    threads = requests // turns
    tally = Tally()
    slots = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency * 2)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(*(_conversation(client, t, turns, slots, tally) for t in range(threads)))
        wall = time.perf_counter() - started
        problems = await _check_threads(client, threads, turns)
    return tally, wall, problems


def run_bench(requests: int, concurrency: int, delay_s: float, turns: int, store: str) -> dict[str, Any]:
    """Start the endpoint and the server, send the load, check the threads; the measurements.

    ``store`` is ``sqlite`` (a fresh file) or ``postgres`` (a throwaway server with its default
    durability, ``tests/support/postgres.py``).
    """
    from tests.support.postgres import throwaway_postgres

    if store == "postgres":
        with throwaway_postgres(durable=True) as url:
            return _bench(requests, concurrency, delay_s, turns, store, url)
    return _bench(requests, concurrency, delay_s, turns, store, None)


def _bench(
    requests: int, concurrency: int, delay_s: float, turns: int, store: str, db_url: str | None
) -> dict[str, Any]:
    from tests.support.fake_openai import fake_openai

    if requests % turns:
        raise ValueError(f"--requests {requests} is not a multiple of --turns {turns}")
    with (
        tempfile.TemporaryDirectory(prefix="aisearch-bench-http-") as tmp,
        fake_openai(_rules(), delay_s=delay_s) as ep,
    ):
        root = Path(tmp)
        (root / "config.toml").touch()
        env = {
            **os.environ,
            "AISEARCH_BASE_URL": ep.url,
            "AISEARCH_CONFIG": str(root / "config.toml"),
            "AISEARCH_DB": db_url or str(root / "threads.sqlite"),
            "AISEARCH_INDEX_DIR": str(root / "index"),
            "AISEARCH_DOCSEARCH_DEFAULT_BUILD": "0",
            "AISEARCH_DOCS_SERVER": "0",
            "AISEARCH_ROUTING": "llm",
            "LANGSMITH_TRACING": "false",
        }
        env.pop("AISEARCH_API_KEY", None)
        load_before = os.getloadavg()[0]
        with serving(env, root / "serve.log") as url:
            tally, wall, problems = asyncio.run(_load(url, requests, concurrency, turns))
        model_calls = len(ep.prompts)
    done = len(tally.seconds)
    return {
        "store": store,
        "load_average_before": round(load_before, 2),
        "requests": requests,
        "concurrency": concurrency,
        "turns_per_thread": turns,
        "threads": requests // turns,
        "model_delay_s": delay_s,
        "model_calls": model_calls,
        "ok": done,
        "errors": tally.errors,
        "thread_problems": problems,
        "wall_s": round(wall, 2),
        "throughput_rps": round(done / wall, 2) if wall else 0.0,
        "p50_s": round(float(np.percentile(tally.seconds, 50)), 3) if done else 0.0,
        "p95_s": round(float(np.percentile(tally.seconds, 95)), 3) if done else 0.0,
        "max_s": round(max(tally.seconds, default=0.0), 3),
    }


def report(results: list[dict[str, Any]], command: str) -> str:
    """The Markdown report of a load test, one row per thread store."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    result = results[0]
    lines = [
        f"# HTTP load test, {now[:10]}",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {machine_line()}; "
        f"run at {now}. Server, scripted model endpoint and client share the cores; the 1-minute load "
        "average before each run (other work on the machine) is in the table.",
        "",
        f"{result['requests']} requests, {result['concurrency']} in flight, as {result['threads']} "
        f"threads of {result['turns_per_thread']} turns (turn 1 `POST /invoke`, then "
        "`POST /conversations/{id}/invoke`, the last turn `POST /conversations/{id}/stream`); every "
        f"model call waits {result['model_delay_s']} s ({result['model_calls']} calls in all).",
        "",
        "| threads in | load avg before | requests ok | errors | wall (s) | throughput (req/s) | P50 (s) "
        "| P95 (s) | max (s) | thread problems |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {r['store']} | {r['load_average_before']} | {r['ok']} | {len(r['errors'])} | {r['wall_s']} | "
            f"{r['throughput_rps']} | {r['p50_s']} | {r['p95_s']} | {r['max_s']} | {len(r['thread_problems'])} |"
            for r in results
        ),
        "",
        "Thread problems: a thread whose stored questions are not exactly its own, in order, each once, "
        "with one answer per turn and one input checkpoint per turn (read back through "
        "`/conversations/{id}/state` and `/history` after the load).",
    ]
    for r in results:
        lines.extend(f"- {r['store']}: {problem}" for problem in [*r["errors"], *r["thread_problems"]][:20])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the load test; exit 1 when a request failed or a thread lost, doubled or mixed a turn."""
    parser = argparse.ArgumentParser(prog="python -m bench.http", description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds every model call waits")
    parser.add_argument("--turns", type=int, default=5, help="turns per thread")
    parser.add_argument(
        "--store",
        action="append",
        choices=["sqlite", "postgres"],
        help="thread store, repeatable (default sqlite; postgres starts a throwaway server)",
    )
    parser.add_argument("--out", type=Path, help="write the Markdown report here (and JSON beside it)")
    args = parser.parse_args(argv)
    try:
        results = [
            run_bench(args.requests, args.concurrency, args.delay, args.turns, s)
            for s in args.store or ["sqlite"]
        ]
    except (ServeError, ValueError) as exc:  # the server did not start; --requests not a multiple of --turns
        sys.stderr.write(f"error: {exc}\n")
        return 2
    for result in results:
        sys.stdout.write(json.dumps({k: v for k, v in result.items() if k != "errors"}, indent=2) + "\n")
    if args.out:
        command = "python -m bench.http " + " ".join(argv if argv is not None else sys.argv[1:])
        args.out.write_text(report(results, command), encoding="utf-8")
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 1 if any(r["errors"] or r["thread_problems"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
