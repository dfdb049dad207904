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
  of the lookup that names it, when every fact holds exactly one year or one number
  (:func:`settled_comparison`);
* a calculator whose filled-in expression holds words computes nothing: the task goes to the
  executor model, which reads its inputs (:func:`words_for_calculator`);
* a tool-free task over bare numbers, for one quantity, is bound to the calculator
  (:func:`calculator_for`).
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Mapping
from typing import Any

from agents.compare import NUMBER, WORDS, YEAR, Comparison, comparison_of, date_key, number_of, settle
from agents.evidence import evidence_id
from agents.facets import answer_choices
from core.plan import Task
from core.run import Run
from core.state import Evidence, TaskOutcome, TaskPayload
from tools.question_forms import HOW_MUCH
from tools.servers.arithmetic import normalize

log = logging.getLogger(__name__)

BARE_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
SETTLED_IN_CODE = ("earlier", "later", "more", "less")  # facts a lookup returns; yes/no ones it does not
MIN_NAME_SHARE = 0.5  # of an entity's words a lookup must name to be that entity's
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


def entity_facts(entities: list[str], found: Mapping[str, str]) -> dict[str, str] | None:
    """Each entity's fact: the one earlier result (its goal and output, ``found``'s key and value)
    that names most of the entity's words; None when an entity has no such result of its own."""
    facts: dict[str, str] = {}
    taken: set[str] = set()
    for entity in entities:
        words = {word.lower() for word in WORDS.findall(entity)}
        shares = {
            key: len(words & {word.lower() for word in WORDS.findall(key)}) / max(len(words), 1)
            for key in found
            if key not in taken
        }
        best = max(shares.values(), default=0.0)
        owners = [key for key, share in shares.items() if share == best]
        if best < MIN_NAME_SHARE or len(owners) != 1:
            return None
        taken.add(owners[0])
        facts[entity] = found[owners[0]]
    return facts


def one_value(form: str, fact: str) -> bool:
    """Whether ``fact`` holds exactly one value of the kind ``form`` compares (one year, one number)."""
    if form in ("earlier", "later"):
        return len(set(YEAR.findall(fact))) == 1 and date_key(fact) is not None
    return len(NUMBER.findall(fact)) == 1 and number_of(fact) is not None


def settled_comparison(run: Run, task: Task, payload: TaskPayload) -> TaskOutcome | None:
    """The outcome of a tool-free or calculator task that compares the dates or numbers its inputs
    found, settled in code; None when the question is no such comparison or the inputs do not
    settle it."""
    spec = run.tools.specs.get(task.tool or "")
    if task.tool and (spec is None or not takes_expression(spec.parameters)):
        return None
    outputs = payload["parent_outputs"]
    comparison: Comparison | None = comparison_of(payload["query"])
    if len(outputs) < 2 or comparison is None or comparison.form not in SETTLED_IN_CODE:
        return None
    goals = payload.get("parent_goals", {})
    found = {f"{goals.get(tid, '')} {output}": output for tid, output in outputs.items()}
    facts = entity_facts(comparison.entities, found)
    if facts is None or not all(one_value(comparison.form, fact) for fact in facts.values()):
        return None
    answer = settle(comparison, facts)
    if answer is None:
        return None
    reasons = "; ".join(f"{entity}: {' '.join(fact.split())}" for entity, fact in facts.items())
    content = f"{answer} ({comparison.form}, compared in code from {reasons})"
    log.info("task %s settled in code: %s", task.id, content)
    evidence = Evidence(
        id=evidence_id("compare", task.goal, content),
        kind="tool",
        title=task.goal,
        source="aisearch:compare",
        content=content,
        task_id=task.id,
    )
    return TaskOutcome("ok", answer, None, evidence=[evidence])
