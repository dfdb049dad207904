"""What the Planner's tasks found, for the Writer: their values, and the answer a computation settled.

On the Planner route the 1.5B Writer re-did the plan's arithmetic from the passages and got it
wrong with the right value in its prompt ("1996 … 2014, making a difference of 8 years" beside
"…: 18"). So the values the tasks returned are listed in the prompt (:func:`plan_findings`), and a
quantity the plan computed answers a "how many / how much" question outright
(:func:`plan_settled`). Its reasons need no model call either (:func:`plan_reasons`): each looked-up
value cited to the passage that states it, then the computation, as a comparison settled in code
is explained by its facts (``agents/compare.py``). A comparison the plan's combining task settled
(``agents/combine.py``), or whose dates or numbers its lookups returned, is answered from them
(:func:`plan_verdict`) rather than read again by the Writer's comparison reader.
"""

from __future__ import annotations

import re

from agents.chain_answer import holds
from agents.combine import Lookup, compared
from agents.compare import Verdict, comparison_of, full_name
from agents.facets import answer_choices
from core.plan import Plan, Task, current_plan
from core.state import Evidence, SearchState, TaskResult, read_passages, resolved_query
from tools.question_forms import HOW_MUCH

MAX_FINDING_CHARS = 80  # a task's value (a year, a number, a name), not a passage or a summary
NUMBER = re.compile(r"^[-−]?\s*(\d+(?:\.\d+)?)$")


def plan_findings(state: SearchState) -> str:
    """The values the Planner's tasks returned, in plan order, for the Writer's prompt ("" when
    none): a computed difference is read from the calculator's task, not worked out again."""
    plan = state.get("plan")
    if state.get("route") != "planner" or not plan:
        return ""
    results = state.get("results", {})
    found = []
    for task in plan["tasks"]:
        result = results.get(task["id"])
        if result is None or result["status"] != "ok":
            continue
        value = " ".join(result["output"].split())
        if 0 < len(value) <= MAX_FINDING_CHARS:
            found.append(f"{result['goal'].rstrip(' ?.')}: {value}")
    return "Found by the plan's tasks: " + "; ".join(found) + "\n" if found else ""


def plan_verdict(state: SearchState, sources: list[Evidence]) -> Verdict | None:
    """The comparison the Planner's tasks settle, its answer named as the entity's own article
    opens: the verdict a combining task recorded (``agents/combine.py``), else the dates or numbers
    the lookups returned compared in code (each entity's value written in a passage its lookup
    read); None on another route or question, or when the tasks leave it open."""
    comparison = comparison_of(resolved_query(state))
    if state.get("route") != "planner" or comparison is None:
        return None
    results = state.get("results", {})
    recorded = [r["compared"] for r in results.values() if r["status"] == "ok" and "compared" in r]
    if recorded and recorded[-1]["settled"] is not None:
        facts, answer = recorded[-1]["facts"], recorded[-1]["settled"]
        verdict: Verdict | None = Verdict(comparison.form, facts, answer)
    else:
        passages = read_passages(results, state.get("evidence", {}))
        lookups = [
            Lookup.of(result["goal"], result["output"], passages[tid])
            for tid, result in results.items()
            if result["status"] == "ok" and tid in passages
        ]
        verdict = compared(comparison, lookups)
    if verdict is None or verdict.answer is None:
        return None
    named = full_name(verdict.answer, sources) if verdict.answer in comparison.entities else verdict.answer
    return Verdict(verdict.form, verdict.facts, named)


def plan_settled(state: SearchState) -> str | None:
    """The number a "how many / how much" question is answered with when the plan computed it.

    Only when the plan ends in one task (nothing depends on it) that a tool ran over earlier tasks'
    results, ok, with a number as its whole output; and not for a choice question ("Who is elder,
    A or B, and by how many years?" needs the name too). A count or an amount is a magnitude, so a
    difference subtracted in the other order (``-19``) answers as ``19``.
    """
    settling = _settling(state)
    if settling is None:
        return None
    number = NUMBER.match(settling[2]["output"].strip())
    return number.group(1) if number else None


def plan_reasons(state: SearchState, sources: list[Evidence]) -> str | None:
    """The reasons of a quantity the plan computed, from the tasks themselves: each value a lookup
    returned cited to the passage that states it, then the computation ("Zoltan Korda's birth
    year: 1895 [1]. Todd Field's birth year: 1964 [3]. Difference: 1964 - 1895 = 69 [1][3].").

    None when nothing is settled, or a looked-up value stands in none of its task's passages: the
    Writer then explains in its own words.
    """
    settling = _settling(state)
    if settling is None or not NUMBER.match(settling[2]["output"].strip()):
        return None
    plan, sink, computed = settling
    needed = plan.ancestors(sink.id)
    numbers = {item["id"]: n for n, item in enumerate(sources, start=1)}
    reasons: list[str] = []
    cited_numbers: list[int] = []
    for task in plan.tasks:
        result = state.get("results", {}).get(task.id)
        if task.id not in needed or result is None or result["status"] != "ok":
            continue
        value = " ".join(result["output"].split())
        goal = result["goal"].rstrip(" ?.")
        if not result["evidence_ids"]:
            reasons.append(f"{goal}: {value}.")
            continue
        cited = next(
            (
                numbers[eid]
                for eid in result["evidence_ids"]
                if eid in numbers and holds(sources[numbers[eid] - 1], value)
            ),
            None,
        )
        if cited is None:
            return None
        cited_numbers.append(cited)
        reasons.append(f"{goal}: {value} [{cited}].")
    rests_on = "".join(f"[{n}]" for n in dict.fromkeys(cited_numbers))
    reasons.append(
        f"{computed['goal'].rstrip(' ?.')}: {_computation(computed)}{' ' + rests_on if rests_on else ''}."
    )
    return " ".join(reasons)


def _computation(result: TaskResult) -> str:
    """``expression = output`` when the tool was given an expression; the output alone otherwise."""
    output = " ".join(result["output"].split())
    calls = [call for call in result["tool_calls"] if call["ok"]]
    expression = calls[-1]["args"].get("expression") if calls else None
    return f"{expression} = {output}" if isinstance(expression, str) and expression.strip() else output


def _settling(state: SearchState) -> tuple[Plan, Task, TaskResult] | None:
    """The plan, and the task whose result answers a "how many / how much" question with that
    result: the plan's one sink, which a tool ran over earlier tasks' results, ok."""
    plan = current_plan(state)
    question = resolved_query(state)
    if state.get("route") != "planner" or plan is None or not HOW_MUCH.search(question):
        return None
    if answer_choices(question):
        return None
    sinks = plan.sinks()
    if len(sinks) != 1:
        return None
    task = sinks[0]
    result = state.get("results", {}).get(task.id)
    if result is None or result["status"] != "ok" or not result["tool"] or not task.deps:
        return None
    return plan, task, result
