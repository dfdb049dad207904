"""Soak benchmark (``aisearch bench soak``): questions in a row through the CLI, memory over time.

Each question runs as a user runs it: a new ``aisearch ask`` process in a session of its own (as
a terminal starts it), against the configured models (the embedded local server by default).
Every ``sample_s`` seconds the resident memory of every process involved is read from ``/proc``
and summed per kind: the ``ask`` process with its children (MCP servers), the local model server
and the document server (the two documented long-lived processes, which outlive a run). After
each question: its exit code, whether its stderr holds a traceback, its seconds, and every
process of its session still alive (a leftover). The report says whether memory is flat: the
model server's memory at the end of each question, and its growth per question over the second
half of the run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.machine import machine_line
from bench.server import REPO
from models.local_server import server_dir

KINDS = ("ask", "model_server", "docs_server")
MODEL_SERVER_CONFIG = str(server_dir() / "config.json")
LEFTOVER_GRACE_S = 3.0


@dataclass
class Proc:
    """One process as ``/proc`` shows it."""

    pid: int
    ppid: int
    sid: int
    rss_mib: float
    cmdline: str


def processes() -> list[Proc]:
    """Every live process (zombies and vanished ones skipped)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if stat[0] == "Z":
            continue
        rss = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        found.append(Proc(int(entry.name), int(stat[1]), int(stat[3]), rss / 1024, cmdline.strip()))
    return found


def _is_model_server(proc: Proc) -> bool:
    """This user's model server (not one a test suite started beside it), either program."""
    launchers = ("models.server_launcher", "models.llama_server_launcher")
    return any(name in proc.cmdline for name in launchers) and MODEL_SERVER_CONFIG in proc.cmdline


def kind_of(proc: Proc, ask_pid: int | None, by_pid: dict[int, Proc]) -> str | None:
    """Which kind of process ``proc`` is for this benchmark, or None when it is none of them
    (llama-server's router and model instances count with the model server that started them)."""
    if "docsearch_server" in proc.cmdline and "streamable-http" in proc.cmdline:
        return "docs_server"
    pid = proc.pid
    while pid > 1 and pid in by_pid:
        if _is_model_server(by_pid[pid]):
            return "model_server"
        if pid == ask_pid:
            return "ask"
        pid = by_pid[pid].ppid
    return None


def memory_by_kind(procs: Iterable[Proc], ask_pid: int | None) -> dict[str, float]:
    """Resident MiB summed per kind."""
    procs = list(procs)
    by_pid = {p.pid: p for p in procs}
    totals = dict.fromkeys(KINDS, 0.0)
    for proc in procs:
        kind = kind_of(proc, ask_pid, by_pid)
        if kind:
            totals[kind] += proc.rss_mib
    return totals


@dataclass
class Sampler:
    """Samples memory per kind every ``interval_s`` seconds in a thread."""

    interval_s: float
    started: float = field(default_factory=time.monotonic)
    samples: list[dict[str, float]] = field(default_factory=list)
    ask_pid: int | None = None
    question: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        """Sample until stopped."""
        while not self._stop.is_set():
            totals = memory_by_kind(processes(), self.ask_pid)
            self.samples.append({"t": round(time.monotonic() - self.started, 1), "q": self.question} | totals)
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()


def ask_once(question: str, env: dict[str, str], sampler: Sampler, timeout_s: float) -> dict[str, Any]:
    """Run one ``aisearch ask`` in a session of its own; its outcome and what it left behind."""
    started = time.monotonic()
    run = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "ask", question],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    sampler.ask_pid = run.pid
    try:
        out, err = run.communicate(timeout=timeout_s)
        code: int | None = run.returncode
    except subprocess.TimeoutExpired:
        run.kill()
        out, err = run.communicate()
        code = None
    seconds = time.monotonic() - started
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    left = [p for p in processes() if p.sid == run.pid]
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [p for p in processes() if p.sid == run.pid]
    return {
        "question": question,
        "exit": code,
        "seconds": round(seconds, 1),
        "traceback": "Traceback (most recent call last)" in err,
        "answered": "answer" in out,
        "leftovers": [p.cmdline[:120] for p in left],
        "stderr_tail": err[-300:] if code != 0 else "",
    }


def run(
    questions: list[str], env: dict[str, str] | None = None, sample_s: float = 2.0, timeout_s: float = 900
) -> dict[str, Any]:
    """Ask every question in a row through the CLI, sampling memory throughout."""
    environment = {**os.environ, **(env or {})}
    sampler = Sampler(interval_s=sample_s)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    rows = []
    try:
        for number, question in enumerate(questions, start=1):
            sampler.question = number
            row = ask_once(question, environment, sampler, timeout_s)
            row["model_server_mib"] = memory_by_kind(processes(), None)["model_server"]
            rows.append(row)
            print(  # noqa: T201 - progress of a long benchmark
                f"{number}/{len(questions)} exit {row['exit']} {row['seconds']} s "
                f"model server {row['model_server_mib']:.0f} MiB",
                file=sys.stderr,
                flush=True,
            )
    finally:
        sampler.stop()
        thread.join(timeout=5)
    return summarize(rows, sampler.samples)


def summarize(rows: list[dict[str, Any]], samples: list[dict[str, float]]) -> dict[str, Any]:
    """The report: per-question rows, the samples, and whether memory stayed flat."""
    model = [row["model_server_mib"] for row in rows]
    half = model[len(model) // 2 :]
    growth = (half[-1] - half[0]) / (len(half) - 1) if len(half) > 1 else 0.0
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_line(),
        "questions": len(rows),
        "errors": sum(1 for row in rows if row["exit"] != 0),
        "tracebacks": sum(1 for row in rows if row["traceback"]),
        "leftover_processes": sum(len(row["leftovers"]) for row in rows),
        "seconds_p50": round(statistics.median(row["seconds"] for row in rows), 1) if rows else None,
        "model_server_mib": {
            "first": round(model[0]) if model else None,
            "max": round(max(model)) if model else None,
            "last": round(model[-1]) if model else None,
            "growth_per_question_second_half": round(growth, 1),
        },
        "ask_peak_mib": round(max((s["ask"] for s in samples), default=0.0)),
        "docs_server_peak_mib": round(max((s["docs_server"] for s in samples), default=0.0)),
        "rows": rows,
        "samples": samples,
    }


def plot(report: dict[str, Any], path: Path) -> None:
    """Resident memory per kind over the run (one line per kind)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4))
    samples = report["samples"]
    for kind in KINDS:
        axis.plot([s["t"] / 60 for s in samples], [s[kind] for s in samples], label=kind.replace("_", " "))
    axis.set_xlabel("minutes")
    axis.set_ylabel("resident MiB")
    axis.set_title(f"aisearch ask × {report['questions']} in a row ({report['date']})")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown (without the samples)."""
    memory = report["model_server_mib"]
    return (
        f"# Soak: {report['questions']} questions in a row through `aisearch ask` ({report['date']})\n\n"
        f"Machine: {report['machine']}.\n\n"
        f"- errors (non-zero exit): {report['errors']}; tracebacks: {report['tracebacks']}; "
        f"leftover processes: {report['leftover_processes']}\n"
        f"- seconds per question, P50: {report['seconds_p50']}\n"
        f"- model server resident MiB after each question: first {memory['first']}, max {memory['max']}, "
        f"last {memory['last']}; growth per question over the second half: "
        f"{memory['growth_per_question_second_half']} MiB\n"
        f"- peak of one `ask` process with its MCP servers: {report['ask_peak_mib']} MiB; "
        f"document server peak: {report['docs_server_peak_mib']} MiB\n"
    )
