"""Plan grounding: every number a plan writes into a tool call comes from somewhere.

A small Planner fills in facts it was asked to look up: a year it "knows" typed into a calculation
(``{{t1}} - 1980`` beside a lookup of only the other year), a date invented for a date difference,
today's year as the other operand. The tasks then run without error and the answer is confidently
wrong. This check makes such a plan invalid, so the Planner's repair round sees it and plans the
missing lookup instead (seed 001 §3.4: the Planner validates its sketch before it runs).

A number is grounded when the question holds it, when an earlier task's result holds it (re-plans
and augmentations), when it is a small constant of arithmetic (a single digit such as ``3`` or
``0.5``, a unit conversion factor), or when it is today's date and the question is measured from
the present ("how old is …": ``tools.question_forms.FROM_THE_PRESENT``). Only numbers inside
string arguments count (``"k": 10`` is a setting, not a fact), and a number glued to letters
(``utf8``, ``t2``) is not a number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from core.plan import REF_PATTERN, Task
from tools.question_forms import FROM_THE_PRESENT

NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")
# Unit conversions (minutes, hours, days, months, percent, thousands) a calculation may use freely.
UNIT_FACTORS = frozenset({"12", "24", "60", "100", "365", "1000"})


def numbers_in(text: str) -> list[str]:
    """The numbers written in ``text`` in order, normalised (``1,945`` → ``1945``; ``07`` → ``7``)."""
    return [_normal(match) for match in NUMBER.findall(text.replace(",", ""))]


def _normal(number: str) -> str:
    whole, _, fraction = number.partition(".")
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def ungrounded_numbers(
    tasks: Iterable[Task], query: str, known: Iterable[str] = (), today: str = ""
) -> list[str]:
    """One problem per tool task whose arguments hold a number from nowhere, phrased for a repair.

    Args:
        tasks: The plan's new tasks.
        query: The question the plan answers.
        known: Texts the plan may take numbers from besides the question (earlier tasks' results).
        today: Today's date as the Planner's prompt gives it.
    """
    grounded = set(numbers_in(query)) | UNIT_FACTORS
    if FROM_THE_PRESENT.search(query):
        grounded.update(numbers_in(today))
    for text in known:
        grounded.update(numbers_in(text))
    problems = []
    for task in tasks:
        if task.tool is None:
            continue
        written = [n for text in _strings(task.args) for n in numbers_in(REF_PATTERN.sub(" ", text))]
        invented = list(dict.fromkeys(n for n in written if n not in grounded and len(n.split(".")[0]) > 1))
        if invented:
            problems.append(
                f"task {task.id}: the number(s) {', '.join(invented)} in its args come neither from the "
                "question nor from a task's result; add a lookup task that finds each one and "
                "reference it as {{tN}} (list it in deps)"
            )
    return problems
