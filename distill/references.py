"""Reference trajectories: a training task's own reference call, for the tasks the teacher missed.

Self-consistency (``distill curate``) keeps a teacher trajectory only where a sample passed both
judges; on the rest, mostly the ones the student most needs (declines the teacher never makes, calls
in parallel), the training split's reference answer is the target instead: BFCL's possible answers
(each argument's first acceptable value; an argument that may be left out and is not required is
left out) or the bundled tasks' reference
calls, and no call for an irrelevance task. A reference trajectory has no thought, so it gives the
``nothought`` example only (:func:`distill.examples.examples_for`), and it passes the same
correctness judge as a teacher reply before it is kept. Only training tasks have one: the dev and
test splits never reach curation.
"""

from __future__ import annotations

from typing import Any

from evals.bfcl_data import BfclTask, wants_call

Call = dict[str, dict[str, Any]]
OMITTED = ""
"""BFCL's mark, among an argument's acceptable values, for 'may be left out'."""


def _choose(options: Any) -> Any:
    """The value a reference call gives one argument: the first acceptable one (a dict's own
    arguments chosen alike)."""
    value = options[0] if isinstance(options, list) and options else options
    if isinstance(value, dict):
        return {key: _choose(inner) for key, inner in value.items() if not _optional(inner)}
    return value


def _optional(options: Any, required: frozenset[str] = frozenset(), name: str = "") -> bool:
    return isinstance(options, list) and OMITTED in options and name not in required


def _choose_required(options: Any) -> Any:
    """A required argument's value: the first acceptable one that is not the omission mark."""
    present = [o for o in options if o != OMITTED] if isinstance(options, list) else options
    return _choose(present)


def _required(task: BfclTask, name: str) -> frozenset[str]:
    for function in task.functions:
        if function.get("name") == name:
            return frozenset(function.get("parameters", {}).get("required", []))
    return frozenset()


def reference_calls(task: BfclTask) -> list[Call] | None:
    """The calls a reference trajectory makes for ``task``: none for an irrelevance task; None when
    the task has no reference (a relevance task, which any call passes)."""
    if task.relevance_only:
        return None if wants_call(task.category) else []
    if not task.answer:
        return None
    calls: list[Call] = []
    for call in task.answer:
        for name, arguments in call.items():
            required = _required(task, name)
            chosen = {
                arg: _choose_required(options) if arg in required else _choose(options)
                for arg, options in arguments.items()
                if not _optional(options, required, arg)
            }
            calls.append({name: chosen})
    return calls
