"""The two local model servers side by side (``aisearch bench servers``): llama-cpp-python's server
against llama.cpp's own ``llama-server``, same model, same prompts.

Both servers are started (private ones on free ports, beside any server the user runs:
``models.local_server.private_server``), warmed up with one call, then measured taking turns:
single-request latency (median of ``repeat`` calls), 2 and 4 requests at once (the wall time of each
round and every request's latency, medians over ``rounds`` rounds), and the resident memory of each
server's processes over ``requests`` requests sent 4 at a time (before, peak, after). The CPU seconds
the server's processes use per request, one at a time and 4 at a time, are the measure a busy shared
machine disturbs least (it slows every call's wall time, not the work a call takes). Every prompt starts with a unique
line, so each call pays its whole prefill on both servers. The calls are a role's typical call
(``bench/role_prompts.py``) with its JSON-schema ``response_format``, as the role sends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.machine import machine_line
from bench.models import role_prompts
from bench.soak import processes
from core.settings import Settings
from models.config import ROLES, LocalServerSettings, Role, ServerKind
from models.local_server import private_server, require_program
from models.structured import schema_response_format

KINDS: tuple[ServerKind, ...] = ("llama-cpp-python", "llama-server")
CONCURRENCY = (2, 4)
MEMORY_BATCH = 4


def tree_rss_mib(pid: int) -> float:
    """Resident MiB of ``pid`` and every process below it."""
    procs = processes()
    children: dict[int, list[int]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc.pid)
    rss = {proc.pid: proc.rss_mib for proc in procs}
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += rss.get(current, 0.0)
        todo += children.get(current, [])
    return round(total, 1)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and every live process below it."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    for proc in processes():
        children.setdefault(proc.ppid, []).append(proc.pid)
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
        todo += children.get(current, [])
    return total


def server_settings(settings: Settings, kind: ServerKind, role: Role) -> Settings:
    """``settings`` with every role on ``role``'s model, served by ``kind`` on a free port, never idle."""
    model = settings.role(role).model
    roles = {name: settings.role(name).model_copy(update={"model": model}) for name in ROLES}
    local = LocalServerSettings(
        **{**settings.local.model_dump(), "server": kind, "port": 0, "idle_minutes": 0.0}
    )
    return settings.model_copy(update={"roles": roles, "local": local})


class Caller:
    """One role's typical call against a server: a fresh prompt each time, its latency and usage."""

    def __init__(self, base_url: str, model: str, role: Role) -> None:
        """Call ``model`` at ``base_url`` with ``role``'s typical prompt, schema and token limit."""
        prompt, schema, self.max_tokens = role_prompts()[role]
        self.url, self.model, self.prompt = f"{base_url}/chat/completions", model, prompt
        self.response_format = schema_response_format(schema) if schema is not None else None
        self.client = httpx.AsyncClient(timeout=900.0)

    async def call(self) -> dict[str, Any]:
        """One request; its latency, tokens and whether its text parsed as JSON (every role's typical
        call asks for JSON; the executor's without a schema)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": f"Request {uuid.uuid4().hex[:8]}.\n{self.prompt}"}],
            "max_tokens": self.max_tokens,
            "temperature": 0,
        }
        if self.response_format is not None:
            body["response_format"] = self.response_format
        start = time.perf_counter()
        resp = await self.client.post(self.url, json=body)
        resp.raise_for_status()
        latency = time.perf_counter() - start
        data = resp.json()
        text = data["choices"][0]["message"]["content"] or ""
        usage = data.get("usage") or {}
        return {
            "latency_s": latency,
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
            "json_ok": _parses(text),
        }

    async def together(self, n: int) -> tuple[float, list[dict[str, Any]]]:
        """``n`` requests at once: the round's wall time and each request's result."""
        start = time.perf_counter()
        results = await asyncio.gather(*(self.call() for _ in range(n)))
        return time.perf_counter() - start, list(results)


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


async def measure(
    callers: dict[str, Caller], pids: dict[str, int], repeat: int, rounds: int, requests: int
) -> dict[str, Any]:
    """Single, concurrent and memory measures, the servers taking turns call by call (a shared,
    noisy machine then slows both alike)."""
    for caller in callers.values():
        await caller.call()  # warm-up: first-touch costs are not the server's speed
    single: dict[str, list[dict[str, Any]]] = {kind: [] for kind in callers}
    cpu = {kind: tree_cpu_s(pid) for kind, pid in pids.items()}
    for _ in range(repeat):
        for kind, caller in callers.items():
            single[kind].append(await caller.call())
    report: dict[str, Any] = {
        kind: {
            "prompt_tokens": results[0]["prompt_tokens"],
            "completion_tokens_median": _median([r["completion_tokens"] for r in results]),
            "single_s": [round(r["latency_s"], 3) for r in results],
            "single_median_s": _median([r["latency_s"] for r in results]),
            "single_cpu_s_per_request": round((tree_cpu_s(pids[kind]) - cpu[kind]) / repeat, 3),
        }
        for kind, results in single.items()
    }
    for n in CONCURRENCY:
        walls: dict[str, list[float]] = {kind: [] for kind in callers}
        latencies: dict[str, list[float]] = {kind: [] for kind in callers}
        for _ in range(rounds):
            for kind, caller in callers.items():
                wall, results = await caller.together(n)
                walls[kind].append(wall)
                latencies[kind] += [r["latency_s"] for r in results]
        for kind in callers:
            report[kind][f"concurrent_{n}"] = {
                "wall_median_s": _median(walls[kind]),
                "latency_median_s": _median(latencies[kind]),
                "walls_s": [round(w, 3) for w in walls[kind]],
            }
    rss = {kind: [tree_rss_mib(pid)] for kind, pid in pids.items()}
    json_ok = {kind: sum(r["json_ok"] for r in single[kind]) for kind in callers}
    cpu = {kind: tree_cpu_s(pid) for kind, pid in pids.items()}
    sent = 0
    while sent < requests:
        batch = min(MEMORY_BATCH, requests - sent)
        for kind, caller in callers.items():
            _, results = await caller.together(batch)
            json_ok[kind] += sum(r["json_ok"] for r in results)
            rss[kind].append(tree_rss_mib(pids[kind]))
        sent += batch
    for kind in callers:
        samples = rss[kind]
        report[kind]["memory"] = {
            "requests": sent, "before_mib": samples[0], "peak_mib": max(samples), "after_mib": samples[-1]
        }  # fmt: skip
        report[kind]["json_valid"] = f"{json_ok[kind]}/{repeat + sent}"
        report[kind]["batched_cpu_s_per_request"] = round((tree_cpu_s(pids[kind]) - cpu[kind]) / sent, 3)
    return report


async def run(
    settings: Settings, *, role: Role = "executor", repeat: int = 5, rounds: int = 3, requests: int = 100
) -> dict[str, Any]:
    """Start both servers, measure them taking turns; the report with medians and ratios.

    Raises:
        LocalServerError: A server's program is missing (checked before either loads a model).
    """
    own = {kind: server_settings(settings, kind, role) for kind in KINDS}
    for kind_settings in own.values():
        require_program(kind_settings)
    callers: dict[str, Caller] = {}
    pids: dict[str, int] = {}
    started: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory(prefix="aisearch-bench-servers-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        for kind in KINDS:
            state = stack.enter_context(private_server(own[kind], Path(tmp) / kind))
            callers[kind] = Caller(state["base_url"], own[kind].role(role).model, role)
            pids[kind], started[kind] = int(state["pid"]), state["start_seconds"]
        try:
            measured = await measure(callers, pids, repeat, rounds, requests)
        finally:
            for caller in callers.values():
                await caller.client.aclose()
    servers = {kind: {"start_s": started[kind], **measured[kind]} for kind in KINDS}
    old, new = servers["llama-cpp-python"], servers["llama-server"]
    ratios = {"single": round(old["single_median_s"] / new["single_median_s"], 2)}
    for n in CONCURRENCY:
        ratios[f"concurrent_{n}_wall"] = round(
            old[f"concurrent_{n}"]["wall_median_s"] / new[f"concurrent_{n}"]["wall_median_s"], 2
        )
    for key in ("single_cpu_s_per_request", "batched_cpu_s_per_request"):
        ratios[key] = round(old[key] / new[key], 2)
    ratios["peak_memory"] = round(new["memory"]["peak_mib"] / old["memory"]["peak_mib"], 2)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_line(),
        "role": role,
        "model": settings.role(role).model,
        "threads": settings.local.n_threads,
        "parallel": settings.local.parallel,
        "servers": servers,
        "speedup": ratios,
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table (seconds are medians; speedup = llama-cpp-python / llama-server)."""
    servers, ratios = report["servers"], report["speedup"]
    lines = [
        f"# Local model servers side by side ({report['date']}, {report['machine']})",
        "",
        f"{report['role']}'s typical call on {report['model']}, n_threads={report['threads']}, "
        f"llama-server parallel={report['parallel']}. Seconds are medians.",
        "",
        "| measure | " + " | ".join(servers) + " | speedup |",
        "|---|" + "---|" * (len(servers) + 1),
        "| start to healthy, s | " + " | ".join(f"{s['start_s']:.2f}" for s in servers.values()) + " | |",
        "| prompt tokens | " + " | ".join(str(s["prompt_tokens"]) for s in servers.values()) + " | |",
        "| one request, s | "
        + " | ".join(f"{s['single_median_s']:.2f}" for s in servers.values())
        + f" | {ratios['single']}× |",
    ]
    for n in CONCURRENCY:
        key = f"concurrent_{n}"
        lines += [
            f"| {n} at once, wall s | "
            + " | ".join(f"{s[key]['wall_median_s']:.2f}" for s in servers.values())
            + f" | {ratios[key + '_wall']}× |",
            f"| {n} at once, per request s | "
            + " | ".join(f"{s[key]['latency_median_s']:.2f}" for s in servers.values())
            + " | |",
        ]
    lines += [
        f"| {name}, CPU s per request | "
        + " | ".join(f"{s[key]:.2f}" for s in servers.values())
        + f" | {ratios[key]}× |"
        for name, key in (
            ("one at a time", "single_cpu_s_per_request"),
            (f"{MEMORY_BATCH} at a time", "batched_cpu_s_per_request"),
        )
    ]
    lines += [
        "| RSS before / peak / after, MiB | "
        + " | ".join(
            f"{s['memory']['before_mib']:.0f} / {s['memory']['peak_mib']:.0f} / {s['memory']['after_mib']:.0f}"
            for s in servers.values()
        )
        + f" | peak ×{ratios['peak_memory']} |",
        "| replies that parse as JSON | " + " | ".join(s["json_valid"] for s in servers.values()) + " | |",
    ]
    return "\n".join(lines) + "\n"
