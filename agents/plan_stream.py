"""Streamed task fetching (LLMCompiler): the tasks of a plan start while the Planner still writes it.

The Planner's reply is streamed (``models.structured.structured_call(on_text=…)``).
:class:`TaskStream` reads each task object of the reply's ``"tasks"`` array as soon as its closing
brace arrives, and :class:`EarlyStart` starts a task it read, as an asyncio task, when

* the plan is still being written: more of the reply arrived after the task was read (a reply
  that arrives in one piece, from a model that does not stream, starts nothing here, and its
  tasks go out as ``Send`` branches as before);
* the Planner's ``accept`` passes it (its tool is a candidate that needs no identifier from
  another tool, it references only its dependencies, and those are tasks read before it);
* every dependency is a task started here that finished ok;
* fewer than ``max_running`` tasks started here are running (``budgets.max_parallel``: with 1,
  one at a time, as the dispatcher does) and ``start`` grants it a share of the tool calls.

When the first reply ends nothing more starts. :meth:`EarlyStart.finish` waits for the running
tasks; the Planner keeps the results of the tasks its validated plan holds unchanged and sends the
run to the Master's review, which dispatches what is left.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from agents.executor import run_task
from agents.id_deps import needs_of
from core.plan import TASK_ID_PATTERN, Plan, Task, task_payload
from core.run import Run
from core.state import CandidateTool, SearchState, TaskResult

log = logging.getLogger(__name__)

Update = dict[str, Any]  # a task's state update: {"results": {id: TaskResult}, "evidence": {…}}
Start = Callable[[Task, dict[str, str]], Awaitable[Update] | None]
Accept = Callable[[Task, set[str]], Task | None]


class TaskStream:
    """The complete task objects of a streamed ``{"reasoning": …, "tasks": [{…}, …]}`` reply.

    A small scanner rather than a partial-JSON parser: a partial parser also returns the task
    still being written, with no sign that it is incomplete.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._text = ""
        self._stack: list[str] = []  # "{", "[", and "tasks" for the tasks array
        self._in_string = False
        self._escape = False
        self._string_start = 0
        self._last_string = ""
        self._key = ""  # the top-level key whose value is being read
        self._task_start = -1

    def feed(self, text: str) -> list[dict[str, Any]]:
        """The task objects completed by ``text`` (the whole reply so far) since the last call."""
        if not text.startswith(self._text):  # another reply: read it from the start
            self._reset()
        found: list[dict[str, Any]] = []
        for index in range(len(self._text), len(text)):
            char = text[index]
            if self._in_string:
                if self._escape:
                    self._escape = False
                elif char == "\\":
                    self._escape = True
                elif char == '"':
                    self._in_string = False
                    self._last_string = text[self._string_start : index]
            elif char == '"':
                self._in_string, self._string_start = True, index + 1
            elif char == ":" and self._stack == ["{"]:
                self._key = self._last_string
            elif char == "[" and self._stack == ["{"] and self._key == "tasks":
                self._stack.append("tasks")
            elif char in "{[":
                if char == "{" and self._stack[-1:] == ["tasks"]:
                    self._task_start = index
                self._stack.append(char)
            elif char in "}]" and self._stack:
                self._stack.pop()
                if char == "}" and self._stack[-1:] == ["tasks"] and self._task_start >= 0:
                    found.extend(_object(text[self._task_start : index + 1]))
                    self._task_start = -1
        self._text = text
        return found


def _object(text: str) -> list[dict[str, Any]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return []
    return [value] if isinstance(value, dict) else []


class EarlyStart:
    """Starts the tasks of a plan still being written (see the module docstring)."""

    def __init__(self, start: Start, accept: Accept, max_running: int) -> None:
        self._start, self._accept, self._max_running = start, accept, max(max_running, 1)
        self._stream = TaskStream()
        self._read_ids: set[str] = set()
        self._fresh: list[Task] = []  # read from the latest text
        self._waiting: list[Task] = []  # read before the latest text: may start
        self._launched: dict[str, tuple[Task, asyncio.Task[Update]]] = {}
        self._open = True

    def feed(self, attempt: int, text: str) -> None:
        """The reply so far (``structured_call``'s ``on_text``): start what may start now."""
        if attempt != 1:  # a repair round: the first reply has ended
            self._open = False
        if not self._open:
            return
        self._waiting += self._fresh  # the reply went on after them: the plan is still being written
        self._fresh = [task for raw in self._stream.feed(text) if (task := self._read(raw)) is not None]
        self._start_ready()

    def _read(self, raw: dict[str, Any]) -> Task | None:
        try:
            task = Task.model_validate(raw)
        except ValidationError:
            return None
        if task.id in self._read_ids:
            return None
        earlier = set(self._read_ids)
        self._read_ids.add(task.id)
        return self._accept(task, earlier)

    def _status(self, task_id: str) -> str | None:
        """``ok``, ``failed``, ``incomplete`` for a finished task started here, else None."""
        result = self._result(task_id)
        return result["status"] if result else None

    def _result(self, task_id: str) -> TaskResult | None:
        if task_id not in self._launched:
            return None
        job = self._launched[task_id][1]
        if not job.done() or job.cancelled() or job.exception() is not None:
            return None
        result: TaskResult = job.result()["results"][task_id]
        return result

    def _start_ready(self) -> None:
        running = sum(not job.done() for _, job in self._launched.values())
        for task in list(self._waiting):
            if running >= self._max_running:
                return
            if not all(self._status(dep) == "ok" for dep in task.deps):
                continue
            outputs = {
                dep: result["output"] for dep in task.deps if (result := self._result(dep)) is not None
            }
            pending = self._start(task, outputs)
            if pending is None:  # no tool calls left to grant: the dispatcher will send it
                return
            self._waiting.remove(task)
            job = asyncio.ensure_future(pending)
            job.add_done_callback(lambda _job: self._start_ready() if self._open else None)
            self._launched[task.id] = (task, job)
            running += 1
            log.info("task %s started while the plan is still being written", task.id)

    async def finish(self) -> dict[str, tuple[Task, Update]]:
        """Start nothing more; wait for the running tasks. Returns each finished task and its update."""
        self._open = False
        jobs = [job for _, job in self._launched.values()]
        outcomes = await asyncio.gather(*jobs, return_exceptions=True)
        finished = {}
        for (task_id, (task, _)), outcome in zip(self._launched.items(), outcomes, strict=True):
            if isinstance(outcome, BaseException):
                log.warning(
                    "task %s, started early, raised %r: it will be dispatched again", task_id, outcome
                )
                continue
            finished[task_id] = (task, outcome)
        return finished

    async def cancel(self) -> None:
        """Stop every task started here (the plan could not be written)."""
        self._open = False
        for _, job in self._launched.values():
            job.cancel()
        await asyncio.gather(*(job for _, job in self._launched.values()), return_exceptions=True)


def early_start(
    run: Run,
    state: SearchState,
    candidates: list[CandidateTool],
    version: int,
    normalise: Callable[[Task], Task],
) -> EarlyStart:
    """What starts tasks of the Planner's first plan while it streams, within the budgets:
    ``max_parallel`` at once, each with a share of the tool calls while any are left.
    ``normalise`` maps a tool written without its server prefix to the candidate's name."""
    budgets = run.settings.budgets
    names = {tool["name"] for tool in candidates}
    needs = needs_of(candidates)
    share = max(budgets.max_tool_calls // budgets.max_parallel, 1)
    calls_left = [budgets.max_tool_calls]
    deadline = state.get("started_at", time.time()) + budgets.wall_clock_s

    def accept(task: Task, earlier: set[str]) -> Task | None:
        task = normalise(task)
        if task.tool is not None and (task.tool not in names or task.tool in needs):
            return None  # not a candidate, or it needs an id the plan must wire first
        if not TASK_ID_PATTERN.match(task.id) or not set(task.deps) <= earlier:
            return None
        return task if task.references() <= set(task.deps) else None

    def start(task: Task, outputs: dict[str, str]) -> Awaitable[Update] | None:
        granted = min(share, calls_left[0])
        if granted <= 0:
            return None
        calls_left[0] -= granted
        payload = task_payload(
            task,
            outputs,
            query=state["query"],
            today=state.get("today", ""),
            plan_version=version,
            tool_calls_left=granted,
            deadline=deadline,
            candidates=[tool["name"] for tool in candidates],
        )
        return run_task(run, payload)

    return EarlyStart(start, accept, budgets.max_parallel)


def early_results(
    finished: dict[str, tuple[Task, Update]], new_plan: Plan
) -> tuple[dict[str, Any], list[TaskResult]]:
    """The state update of the early tasks the validated plan holds unchanged, and the results of
    those it does not (repaired away, or replaced by the fallback): discarded, their calls counted."""
    tasks = new_plan.by_id()
    update: dict[str, Any] = {"results": {}, "evidence": {}}
    discarded: list[TaskResult] = []
    for task_id, (task, outcome) in finished.items():
        if tasks.get(task_id) == task:
            update["results"] |= outcome["results"]
            update["evidence"] |= outcome["evidence"]
        else:
            discarded.extend(outcome["results"].values())
    return update, discarded
