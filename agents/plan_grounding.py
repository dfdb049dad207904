"""Plan grounding: every number a plan writes into a tool call comes from somewhere, and every
argument it writes out fits the tool's schema.

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

An argument the plan writes out (no ``{{tN}}`` in it) is checked against the tool's JSON schema for
what the value itself must be: a pattern, an enum, a constant, a length. A film's title as the
start of a date difference fails the date pattern here, before the call, and the repair round
plans a lookup or another tool. Types are not checked: the executor coerces ``"5"`` to ``5``.

A question that asks for one quantity ("how many years after …": ``tools.question_forms.HOW_MUCH``,
not a choice between named options) is answered by one task: a plan whose lookups each end it, with
no task combining them, leaves the arithmetic to the Writer, which gets it wrong (all 5 such plans
of the 16 compositional tuning questions). Such a first plan is sent back to be completed.

A lookup whose result a later task computes with (``abs({{t1}} - {{t2}})``) returns a number: the
plan's own structure says so even when the Planner left ``returns`` out, and without it the
search task ends in the executor's sentence ("Ernst Messerschmid was born on May 21, 1945. He
is …"), which no calculator parses (:func:`numeric_operands`). One that declares a date returns
its year: arithmetic cannot take "January 6, 1874", and the 1.5B writes "a date" for a birth date
it then subtracts, against the prompt's rule (dates are subtracted with a date tool, which takes
its arguments whole, not as operands of an expression).
"""

from __future__ import annotations

import ast
import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

from agents.facets import answer_choices
from core.plan import REF_PATTERN, Plan, Task
from tools.question_forms import FROM_THE_PRESENT, HOW_MUCH

NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")
# Unit conversions (minutes, hours, days, months, percent, thousands) a calculation may use freely.
UNIT_FACTORS = frozenset({"12", "24", "60", "100", "365", "1000"})
# What a written-out value must be by itself; "type" and "required" are the executor's to settle.
VALUE_RULES = frozenset({"pattern", "enum", "const", "minLength", "maxLength"})

# The nodes of an arithmetic expression (a calculator's input): numbers, operators, function calls.
ARITHMETIC_NODES = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Constant, ast.Call,
    ast.Name, ast.Load,
)  # fmt: skip
MAX_EXPRESSION_CHARS = 1000  # a longer argument is read as text, not parsed
DATE_VALUE = re.compile(r"\bdates?\b", re.IGNORECASE)  # "a date", "the date of birth": not a number

log = logging.getLogger(__name__)


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


def misfit_arguments(tasks: Iterable[Task], schemas: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One problem per written-out argument whose value the tool's schema rules out.

    Args:
        tasks: The plan's new tasks.
        schemas: Each candidate tool's input schema, by qualified name.
    """
    problems = []
    for task in tasks:
        schema = schemas.get(task.tool or "")
        if not schema:
            continue
        written = {k: v for k, v in task.args.items() if not REF_PATTERN.search(json.dumps(v, default=str))}
        loose = {key: value for key, value in schema.items() if key != "required"}
        try:
            Draft202012Validator.check_schema(loose)
            errors = list(Draft202012Validator(loose).iter_errors(written))
        except (SchemaError, Unresolvable) as exc:  # a third-party schema it cannot read: no check
            log.debug("schema of %s unreadable: %s", task.tool, exc)
            continue
        for error in errors:
            if error.validator in VALUE_RULES and error.path:
                name = str(error.path[0])
                problems.append(
                    f"task {task.id}: argument {name!r} = {json.dumps(written.get(name), default=str)[:80]} "
                    f"does not fit {task.tool}: {error.message[:160]}"
                )
    return problems


def uncombined_tasks(tasks: list[Task], query: str) -> list[str]:
    """The problem of a plan for one quantity whose several tasks each end it, none combining them
    (``[]`` for any other question or plan), phrased for a repair."""
    if not HOW_MUCH.search(query) or answer_choices(query):
        return []
    ends = [task.id for task in Plan(tasks=tasks).sinks()]
    if len(ends) < 2:
        return []
    refs = " and ".join("{{" + tid + "}}" for tid in ends)
    return [
        f"the question asks for one quantity, but tasks {', '.join(ends)} each end the plan and no task "
        f"combines their results: add one final task that computes the answer from {refs} with the "
        "calculator (list them in its deps)"
    ]


def arithmetic_operands(text: str) -> list[str]:
    """The task ids whose ``{{tN}}`` stand as operands of the arithmetic expression ``text``
    (``[]`` when ``text`` is no such expression). The text is parsed, never evaluated."""
    ids = [match.group(1) for match in REF_PATTERN.finditer(text)]
    if not ids or len(text) > MAX_EXPRESSION_CHARS:
        return []
    try:
        tree = ast.parse(REF_PATTERN.sub("1", text).strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python, or nested too deep
        return []
    nodes = list(ast.walk(tree))
    if not any(isinstance(node, ast.BinOp) for node in nodes):
        return []
    return ids if all(isinstance(node, ARITHMETIC_NODES) for node in nodes) else []


def operand_value(task: Task) -> str:
    """What ``task`` returns as an operand of arithmetic: a number when it declares no value, the
    year when it declares a date, else the value it declares ("a year", "meters": the Planner's)."""
    if not task.declares_value():
        return "a number"
    return "a year" if DATE_VALUE.search(task.returns) else task.returns


def numeric_operands(tasks: list[Task]) -> list[Task]:
    """``tasks`` with each task whose result another computes with returning a value arithmetic
    takes (:func:`operand_value`)."""
    operands = {tid for task in tasks for text in _strings(task.args) for tid in arithmetic_operands(text)}
    return [
        task.model_copy(update={"returns": operand_value(task)}) if task.id in operands else task
        for task in tasks
    ]
