"""Benchmark of backup tools under injected faults (``aisearch bench faults``).

A fixed set of arithmetic questions (asked ``ROUNDS`` times), each a call of ``python.calculate`` whose answer is known,
runs through the Executor's call layer (``agents/executor_backup.call_with_backups``: retry
policy, then the toolkit's backups) against the real ``python`` MCP server behind the
fault-injecting proxy (``tools/servers/faults_server.py``), which fails, hangs or garbles
``fail_rate`` of ``calculate``'s calls (seeded). The same questions and the same fault sequence run
twice: with backups (its equivalent peer ``calculate_precise``, another engine) and without. A
question succeeds when the call ends with the expected number. No model is called: the peer's
arguments map by name, and the judge of a full run is not what is measured here.
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime
from typing import Any

from agents.executor import args_model
from agents.executor_backup import call_with_backups, failure_reason
from bench.machine import machine_line
from core.plan import Task
from core.run import Run
from core.settings import Settings, load_settings
from core.settings_groups import Budgets
from tools.hub import ToolHub
from tools.servers.faults_server import proxy_connection

FAULTY_TOOL = "calculate"
TOOL = f"python.{FAULTY_TOOL}"
TIMEOUT_S = 2.0  # a hanging call costs this much before the backup is tried
MAX_CALLS = 4  # a task's share of the tool-call budget
ROUNDS = 3  # passes over the questions (the faults differ each pass)
# (expression, answer): the kind of arithmetic the Planner hands the calculator
QUESTIONS: list[tuple[str, str]] = [
    ("17 * 23 + 4", "395"), ("2^10", "1024"), ("156 - 100", "56"), ("240 * 15 / 100", "36"),
    ("1,000 / 8", "125"), ("sqrt(144) + 3", "15"), ("(2025 - 1969) * 12", "672"), ("7 * 7 * 7", "343"),
    ("99 + 1", "100"), ("3600 / 60", "60"), ("2^16 - 1", "65535"), ("45 * 45", "2025"),
    ("1234 + 4321", "5555"), ("81 / 9", "9"), ("12 * 12 - 44", "100"), ("10^6 / 1000", "1000"),
    ("365 * 24", "8760"), ("500 - 123", "377"), ("factorial(6)", "720"), ("17 % 5", "2"),
    ("2 * (3 + 4) * 5", "70"), ("1969 - 1492", "477"), ("11 * 11 * 11", "1331"), ("8848 - 1545", "7303"),
]  # fmt: skip


def _settings(backups: bool) -> Settings:
    budgets = Budgets(tool_timeout_s=TIMEOUT_S, tool_retries=1, tool_backups=2 if backups else 0)
    return load_settings().model_copy(update={"budgets": budgets})


async def _run_condition(fail_rate: float, seed: int, backups: bool) -> list[dict[str, Any]]:
    """Every question once through one hub whose ``calculate`` fails at ``fail_rate``."""
    connection = proxy_connection("python", [FAULTY_TOOL], rate=fail_rate, mode="mixed", seed=seed, hang_s=60)
    rows = []
    async with ToolHub.open({"python": connection}) as hub:
        run = Run(_settings(backups), lambda role: _no_model(role), hub)
        for number, (expression, answer) in enumerate(QUESTIONS * ROUNDS, 1):
            task = Task(
                id=f"q{number}", goal=f"Compute {expression}", tool=TOOL, args={"expression": expression}
            )
            started = time.perf_counter()
            call = await call_with_backups(
                run, task, TOOL, dict(task.args), max_calls=MAX_CALLS, arg_models=args_model
            )
            seconds = time.perf_counter() - started
            ok = failure_reason(call.outcome) is None and call.outcome.output.strip() == answer
            rows.append(
                {
                    "expression": expression,
                    "ok": ok,
                    "seconds": round(seconds, 3),
                    "calls": len(call.calls),
                    "tools": [outcome.tool for outcome in call.calls],
                    "switches": len(call.switches),
                    "error": None if ok else (call.outcome.error or call.outcome.output)[:200],
                }
            )
    return rows


def _no_model(role: str) -> Any:
    raise RuntimeError(f"the faults benchmark calls no model (asked for the {role} model)")


def _summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {
        "success": round(sum(row["ok"] for row in rows) / len(rows), 3),
        "p50_s": round(statistics.median(row["seconds"] for row in rows), 3),
        "p50_calls": statistics.median(row["calls"] for row in rows),
        "mean_calls": round(statistics.fmean(row["calls"] for row in rows), 3),
        "switches": sum(row["switches"] for row in rows),
    }


async def run(fail_rate: float = 0.3, seed: int = 0) -> dict[str, Any]:
    """Both conditions over the same questions and fault sequence; the JSON contract's report."""
    if not 0 <= fail_rate <= 1:
        raise ValueError(f"--fail-rate must be between 0 and 1, got {fail_rate}")
    with_rows = await _run_condition(fail_rate, seed, backups=True)
    without_rows = await _run_condition(fail_rate, seed, backups=False)
    with_summary, without_summary = _summary(with_rows), _summary(without_rows)
    return {
        "n": len(QUESTIONS) * ROUNDS,
        "fail_rate": fail_rate,
        "success_with_backup": with_summary["success"],
        "success_without_backup": without_summary["success"],
        "backup_switches": with_summary["switches"],
        "p50_s_with_backup": with_summary["p50_s"],
        "p50_s_without_backup": without_summary["p50_s"],
        "p50_calls_with_backup": with_summary["p50_calls"],
        "p50_calls_without_backup": without_summary["p50_calls"],
        "mean_calls_with_backup": with_summary["mean_calls"],
        "mean_calls_without_backup": without_summary["mean_calls"],
        "faulty_tool": TOOL,
        "fault_modes": "mixed (fail, hang, garbage)",
        "tool_timeout_s": TIMEOUT_S,
        "seed": seed,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_line(),
        "questions": {"with_backup": with_rows, "without_backup": without_rows},
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as a short Markdown table."""
    lines = [
        f"# Backup tools under injected faults ({report['date']})",
        "",
        f"{report['n']} calculator questions ({len(QUESTIONS)} × {ROUNDS}), {report['fail_rate']:.0%} of `{report['faulty_tool']}` calls "
        f"faulted ({report['fault_modes']}, timeout {report['tool_timeout_s']:g} s, seed {report['seed']}), "
        f"on {report['machine']}.",
        "",
        "| condition | success | P50 s | P50 calls | mean calls | switches |",
        "|---|---|---|---|---|---|",
    ]
    for name, key in (("with backups", "with_backup"), ("without backups", "without_backup")):
        lines.append(
            f"| {name} | {report[f'success_{key}']} | {report[f'p50_s_{key}']} | {report[f'p50_calls_{key}']} "
            f"| {report[f'mean_calls_{key}']} | {report['backup_switches'] if key == 'with_backup' else 0} |"
        )
    return "\n".join(lines) + "\n"
