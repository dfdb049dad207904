"""What the tool dependency graph learns from runs, and what it tells the Planner.

After each task the Executor counts its tool calls (ok or not), and a task that depended on
another task completes a chain from the parent's tool to its own, counted as a success when the
task is ok (``tools/tool_graph.py``). Counts go to SQLite beside the thread checkpoints. The
Planner is shown the chains among its candidates that have worked before.
"""

from __future__ import annotations

import asyncio
import logging

from core.plan import Task
from core.run import Run
from core.state import TaskOutcome, TaskPayload
from tools.tool_graph import ToolHistory, build_graph, chain_hints, history_path

log = logging.getLogger(__name__)


def run_history(run: Run) -> ToolHistory:
    """The run's tool history (opened on first use)."""
    if run.history is None:
        run.history = ToolHistory(history_path(run.settings.db_path))
    return run.history


async def record_task(run: Run, task: Task, payload: TaskPayload, outcome: TaskOutcome) -> None:
    """Count ``outcome``'s tool calls and the chains from ``task``'s parents' tools to its own."""
    history = run_history(run)
    final = next((call.tool for call in reversed(outcome.calls) if call.ok), None)
    tool = final or (run.tools.resolve(task.tool) if task.tool else None)
    turn = payload["query"]
    if final:
        history.task_tools[(turn, task.id)] = final
    chains = []
    if tool:
        for dep in task.deps:
            parent = history.task_tools.get((turn, dep))
            if parent and parent != tool:
                chains.append((parent, tool, outcome.status == "ok"))
    calls = [(call.tool, call.ok) for call in outcome.calls]
    try:
        await asyncio.to_thread(history.record, calls, chains)
    except Exception as exc:  # noqa: BLE001 - a history that cannot be written never fails a task
        log.warning("could not record tool history in %s: %s", history.path, exc)


def chain_hint(run: Run, candidates: list[str]) -> str:
    """A line for the Planner's tool list naming the likeliest chains among ``candidates``, or ""."""
    specs = [run.tools.specs[name] for name in candidates if name in run.tools.specs]
    if len(specs) < 2:
        return ""
    try:
        hints = chain_hints(build_graph(specs, run_history(run)), candidates)
    except Exception as exc:  # noqa: BLE001 - a hint is never worth failing a plan
        log.warning("no chain hints from the tool history: %s", exc)
        return ""
    return "\nChains that worked in earlier runs: " + "; ".join(hints) if hints else ""
