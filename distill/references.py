"""Reference trajectories: a training task's own reference call, for the tasks the teacher missed.

Self-consistency (``distill curate``) keeps a teacher trajectory only where a sample passed both
judges; on the rest, mostly the ones the student most needs (declines the teacher never makes, calls
in parallel), the training split's reference answer is the target instead: BFCL's possible answers
(each argument's first acceptable value, filled in even where BFCL would accept it left out: a
student taught to leave optional arguments out leaves out the ones a task asks for) or the bundled tasks' reference
calls, and no call for an irrelevance task. A reference trajectory has no thought, so it gives the
``nothought`` example only (:func:`distill.examples.examples_for`), and it passes the same
correctness judge as a teacher reply before it is kept. Only training tasks have one: the dev and
test splits never reach curation.
"""

from __future__ import annotations

from typing import Any

from evals.bfcl_calls import Call
from evals.bfcl_data import BfclTask, wants_call

OMITTED = ""
"""BFCL's mark, among an argument's acceptable values, for 'may be left out'."""
NOTHING = object()  # no value to give: the argument is left out


def _choose(options: Any) -> Any:
    """The value a reference call gives one argument: the first acceptable one that is a value
    (BFCL accepts any listed value, but an omission only where it lists one), a dict's own
    arguments chosen alike; :data:`NOTHING` when the omission mark is all there is."""
    listed = options if isinstance(options, list) else [options]
    value = next((option for option in listed if option != OMITTED), NOTHING)
    if isinstance(value, dict):
        return _filled(value)
    return value


def _filled(arguments: dict[str, Any]) -> dict[str, Any]:
    chosen = {name: _choose(options) for name, options in arguments.items()}
    return {name: value for name, value in chosen.items() if value is not NOTHING}


def reference_calls(task: BfclTask) -> list[Call] | None:
    """The calls a reference trajectory makes for ``task``: none for an irrelevance task; None when
    the task has no reference (a relevance task, which any call passes)."""
    if task.relevance_only:
        return None if wants_call(task.category) else []
    if not task.answer:
        return None
    return [{name: _filled(arguments)} for call in task.answer for name, arguments in call.items()]
