"""The task that combines lookups: a comparison settled in code, the calculator given numbers only.

A plan for "Who is older, A or B?" looks each entity up and ends in one task over both results.
Left to the 0.5B executor that task often said "incomplete" with both dates among its inputs, and
bound to the calculator it was handed the lookups' sentences (``"Peter Duffell is an actor. ==
Fred Niblo is an American actor."``) or words (``abs(actor - film director)``), which no calculator
parses. Either way the Master re-planned, the same lookups ran again, and the re-plan took most of
the run (``aisearch bench dag``, docs/results.md, 2026-11-28). So, for a task over two or more
earlier results:

* a comparison of dates or numbers (``agents/compare.py``'s forms earlier, later, more and less)
  is settled by the code the Writer's comparison reader uses, each entity's fact being the result
  of the lookup that names it, when every fact holds exactly one year or one number and a passage
  its lookup read states it (the 0.5B read "1833" for a man born in 1974) (:func:`compared`);
* any other comparison the reader's forms name (a choice: "Which is a gun dog, A or B?"; both:
  "Were A and B both actors?"), or one whose values the lookups did not return, is settled by the
  Writer's reader asked about each entity over the passages of that entity's own lookup
  (:func:`read_lookups`): the 0.5B said "incomplete" there, and each of its re-plans searched again
  for 40 s or more (:func:`combining_inputs`, :func:`settled_comparison`); the Writer answers from the task's verdict;
* a calculator whose filled-in expression holds words computes nothing: the task goes to the
  executor model, which reads its inputs (:func:`words_for_calculator`);
* since the combining step reads each entity itself, a lookup of one compared entity stops at the
  search that finds passages naming the whole entity (:func:`lookup_entity`): its own reading was paid twice,
  and for nothing where the Planner asked for another quantity ("age in years" for "who is
  older?", whose passages state birth dates);
* a tool-free task over bare numbers, for one quantity, is bound to the calculator
  (:func:`calculator_for`).
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.compare import (
    MIN_NAME_SHARE,
    NUMBER,
    YEAR,
    Comparison,
    Verdict,
    comparison_of,
    date_key,
    name_share,
    names,
    read_entities,
    settle,
    sources_about,
)
from agents.evidence import evidence_id
from agents.facets import answer_choices
from core.plan import Task
from core.run import Run
from core.state import ComparedRecord, Evidence, TaskOutcome, TaskPayload
from models.errors import MODEL_ERRORS, describe_model_error
from tools.question_forms import HOW_MUCH
from tools.servers.arithmetic import normalize

log = logging.getLogger(__name__)

BARE_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
SETTLED_IN_CODE = ("earlier", "later", "more", "less")  # facts a lookup returns; yes/no ones it does not
LONGEST_CONSTANT = 3  # pi, e, tau, inf: a longer bare name in an expression is a word


def takes_expression(parameters: Mapping[str, Any]) -> bool:
    """Whether a tool with this input schema is a calculator (it takes an arithmetic ``expression``)."""
    properties = parameters.get("properties", {})
    return isinstance(properties, Mapping) and "expression" in properties


def bare_numbers(parent_outputs: Mapping[str, str]) -> dict[str, str]:
    """The earlier tasks' outputs that are bare numbers ("1867"), by task id."""
    stripped = {tid: out.strip() for tid, out in parent_outputs.items()}
    return {tid: out for tid, out in stripped.items() if BARE_NUMBER.fullmatch(out)}


def calculator_for(run: Run, task: Task, payload: TaskPayload) -> str | None:
    """The calculator a tool-free task computes with, when the question asks for one quantity
    (``HOW_MUCH``, not a choice between named options) and every input the task is given is a bare
    number: a candidate tool that takes an arithmetic ``expression``, else any tool of the run's
    servers that does; None otherwise.

    The Planner leaves the final arithmetic tool-free ("Difference of the two years", ``"tool":
    null``) when no calculator was retrieved for the question, and the 0.5B then answers 1867 −
    1866 as "4" from its head; asked for the calculator's expression instead, it writes the
    subtraction.
    """
    inputs = payload["parent_outputs"]
    if task.tool or payload["tool_calls_left"] < 1 or not inputs or len(bare_numbers(inputs)) < len(inputs):
        return None
    query = payload["query"]
    if not HOW_MUCH.search(query) or answer_choices(query):
        return None
    specs = run.tools.specs
    reach = [*payload.get("candidates", []), *specs]  # the run's candidates first, then any tool
    return next((name for name in reach if name in specs and takes_expression(specs[name].parameters)), None)


def words_for_calculator(run: Run, task: Task) -> bool:
    """Whether ``task`` is bound to a calculator and its filled-in expression holds words: text that
    does not parse as arithmetic, or a bare name longer than a constant that no function call takes."""
    spec = run.tools.specs.get(task.tool or "")
    expression = task.args.get("expression")
    if spec is None or not takes_expression(spec.parameters) or not isinstance(expression, str):
        return False
    try:
        tree = ast.parse(normalize(expression), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return any(
        isinstance(node, ast.Name) and id(node) not in called and len(node.id) > LONGEST_CONSTANT
        for node in ast.walk(tree)
    )


@dataclass(frozen=True)
class Lookup:
    """An earlier task's finding as a comparison reads it."""

    label: str  # what names its entity: the task's goal and output
    value: str  # the output
    passages: tuple[Evidence, ...] | None  # the passages it read (None: not known, as for a tool's value)

    @classmethod
    def of(cls, goal: str, output: str, passages: list[Evidence] | None) -> Lookup:
        """The finding of a task with this goal and output, named by both (the executor's combining
        task and the Writer read a task the same way)."""
        return cls(f"{goal} {output}", output, tuple(passages) if passages is not None else None)


def value_of(form: str, fact: str) -> str | None:
    """The one value ``fact`` holds of the kind ``form`` compares (a year, a number), or None when
    it holds none or several."""
    if form in ("earlier", "later"):
        years = set(YEAR.findall(fact))
        return years.pop() if len(years) == 1 and date_key(fact) is not None else None
    numbers = NUMBER.findall(fact)
    return numbers[0].replace(",", "") if len(numbers) == 1 else None


def stated(form: str, entity: str, lookup: Lookup) -> bool:
    """Whether the lookup's value is written in a passage it read that names the entity (a misread
    year is not, nor the year of another article the search found instead)."""
    value = value_of(form, lookup.value)
    if value is None:
        return False
    if lookup.passages is None:
        return True
    pattern = YEAR if form in ("earlier", "later") else NUMBER
    return any(
        value in {m.replace(",", "") for m in pattern.findall(passage["content"])}
        and name_share(entity, passage["content"]) >= MIN_NAME_SHARE
        for passage in lookup.passages
    )


def owners(entity: str, lookups: list[Lookup]) -> list[Lookup]:
    """The lookups that name most of the entity's words, when that is at least half of them."""
    shares = [name_share(entity, item.label) for item in lookups]
    best = max(shares, default=0.0)
    if best < MIN_NAME_SHARE:
        return []
    return [item for item, share in zip(lookups, shares, strict=True) if share == best]


def owner(entity: str, lookups: list[Lookup], form: str) -> Lookup | None:
    """The lookup that names the entity (:func:`owners`), or None; several that name it equally
    must agree on the value."""
    named = owners(entity, lookups)
    if not named or len({value_of(form, item.value) for item in named}) != 1:
        return None
    return named[0]


def compared(comparison: Comparison, lookups: list[Lookup]) -> Verdict | None:
    """The comparison of dates or numbers the lookups settle, or None: each entity needs a lookup of
    its own holding exactly one such value, written in a passage it read that names the entity."""
    if comparison.form not in SETTLED_IN_CODE:
        return None
    facts: dict[str, str] = {}
    used: list[Lookup] = []
    for entity in comparison.entities:
        found = owner(entity, lookups, comparison.form)
        if found is None or not stated(comparison.form, entity, found) or any(found is item for item in used):
            return None
        used.append(found)
        facts[entity] = " ".join(found.value.split())
    answer = settle(comparison, facts)
    return Verdict(comparison.form, facts, answer) if answer is not None else None


async def read_lookups(
    run: Run, comparison: Comparison, question: str, lookups: list[Lookup]
) -> Verdict | None:
    """The comparison settled by reading each entity over the passages of the one lookup that names
    it, those that name the entity too, with the Writer's reader model (``agents/compare.py``: a
    yes/no, a date or a number per entity); None when an entity has no lookup of its own or it read
    no passage naming the entity, a reading fails, or the readings leave it open."""
    by_entity: dict[str, list[Evidence]] = {}
    used: list[Lookup] = []
    for entity in comparison.entities:
        named = owners(entity, lookups)
        if len(named) != 1 or any(named[0] is item for item in used):
            return None
        about = [p for p in named[0].passages or () if names(entity, p)]
        if not about:  # it read nothing that names the entity: another article's facts
            return None
        used.append(named[0])
        by_entity[entity] = sources_about(entity, about)
    try:
        verdict = await read_entities(run.model("writer"), comparison, question, by_entity)
    except MODEL_ERRORS as exc:
        log.warning("reading the compared entities failed: %s", describe_model_error(exc))
        return None
    return verdict if verdict.answer is not None else None


def lookup_entity(question: str, goal: str) -> str | None:
    """The compared entity a lookup with this goal is for, when ``question`` is a comparison the
    combining step reads entity by entity (:func:`read_lookups`) and the goal names that entity
    alone; None otherwise (a question asking "by how many years" is no such comparison: its
    lookups return the values a calculator takes)."""
    comparison = comparison_of(question)
    if comparison is None:
        return None
    named = [entity for entity in comparison.entities if name_share(entity, goal) >= MIN_NAME_SHARE]
    return named[0] if len(named) == 1 else None


def combining_inputs(run: Run, task: Task, payload: TaskPayload) -> tuple[Comparison, list[Lookup]] | None:
    """The comparison a tool-free or calculator task over two or more earlier results makes, and
    its lookups; None for any other task or question."""
    spec = run.tools.specs.get(task.tool or "")
    if task.tool and (spec is None or not takes_expression(spec.parameters)):
        return None
    outputs = payload["parent_outputs"]
    comparison = comparison_of(payload["query"])
    if len(outputs) < 2 or comparison is None:
        return None
    goals, passages = payload.get("parent_goals", {}), payload.get("parent_passages", {})
    return comparison, [
        Lookup.of(goals.get(tid, ""), output, passages.get(tid)) for tid, output in outputs.items()
    ]


async def settled_comparison(
    run: Run, task: Task, question: str, comparison: Comparison, lookups: list[Lookup]
) -> TaskOutcome | None:
    """The outcome of the task that makes ``comparison`` over ``lookups``: settled in code from the
    values the lookups returned (:func:`compared`), else by reading each entity over its lookup's
    passages (:func:`read_lookups`); None when neither settles it (the executor model then takes
    the task)."""
    verdict, how = compared(comparison, lookups), "compared in code"
    if verdict is None:
        verdict, how = await read_lookups(run, comparison, question, lookups), "read one entity at a time"
    if verdict is None or verdict.answer is None:
        return None
    reasons = "; ".join(f"{entity}: {fact}" for entity, fact in verdict.facts.items())
    content = f"{verdict.answer} ({verdict.form}, {how} from {reasons})"
    log.info("task %s settled: %s", task.id, content)
    evidence = Evidence(
        id=evidence_id("compare", task.goal, content),
        kind="tool",
        title=task.goal,
        source="aisearch:compare",
        content=content,
        task_id=task.id,
    )
    record = ComparedRecord(form=verdict.form, facts=verdict.facts, settled=verdict.answer)
    return TaskOutcome("ok", verdict.answer, None, evidence=[evidence], compared=record)
