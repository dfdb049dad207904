"""Re-plans that ask again for what the run already has.

Re-planning after one failed task, or augmenting after an incomplete one, a small Planner often
writes the whole plan again: the lookups that already succeeded come back under new ids (seen on
the compositional questions: the same two birth-year searches written three times over one
question, each round running them again). A new task that repeats a kept task is that task: it is
dropped, and the new tasks that referred to it refer to the kept one. A task repeats another when
it calls the same tool with the same arguments, or, with no arguments, has the same tool, goal and
inputs (letter case and spacing aside).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from core.plan import REF_PATTERN, Task
from tools.cache.tool_calls import canonical_args


def renamed(tasks: list[Task], mapping: Mapping[str, str]) -> list[Task]:
    """``tasks`` with ids, dependencies and ``{{tN}}`` references renamed by ``mapping``."""
    if not mapping:
        return tasks

    def rename(text: str) -> str:
        def swap(match: re.Match[str]) -> str:
            field = f".{match.group(2)}" if match.group(2) else ""
            return "{{" + mapping.get(match.group(1), match.group(1)) + field + "}}"

        return REF_PATTERN.sub(swap, text)

    return [
        task.model_copy(
            update={
                "id": mapping.get(task.id, task.id),
                "deps": list(dict.fromkeys(mapping.get(dep, dep) for dep in task.deps)),
                "args": json.loads(rename(json.dumps(task.args))),
                "goal": rename(task.goal),
            }
        )
        for task in tasks
    ]


def _folded(value: Any) -> Any:
    """``value`` with every string case-folded and its spacing collapsed."""
    if isinstance(value, str):
        return " ".join(value.casefold().split())
    if isinstance(value, dict):
        return {key: _folded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_folded(item) for item in value]
    return value


def task_key(task: Task) -> str:
    """What a task asks for: its tool and arguments, or its tool, goal and inputs without them."""
    if task.args:
        return f"call\0{task.tool}\0{canonical_args(_folded(task.args))}"
    return f"goal\0{task.tool}\0{_folded(task.goal)}\0{','.join(sorted(task.deps))}"


def reuse_kept(tasks: list[Task], kept: list[Task]) -> tuple[list[Task], dict[str, str]]:
    """The new tasks without those that repeat a kept task, and which new id became which kept one.

    A repeat found makes the tasks that build on it repeats too when they then ask the same (the
    computation over two looked-up years, written again over the new lookups), so the search runs
    until nothing more is found.
    """
    known = {task_key(task): task.id for task in kept}
    reused: dict[str, str] = {}
    remaining = list(tasks)
    while True:
        keys = {task.id: task_key(task) for task in remaining}
        found = {tid: known[key] for tid, key in keys.items() if key in known}
        if not found:
            return remaining, reused
        reused |= found
        remaining = renamed([task for task in remaining if task.id not in found], found)
