"""The Executor's search loop: sub-queries, rounds, a sufficiency check after each, refinement.

Seed 001 §2 and §4: for a task bound to a search tool the executor does not make one call and
hope. Each round it

1. writes 1-3 sub-queries for what is still missing (the planner's own query, when the plan gave
   one, is the first round's query, with the task's goal beside it when the goal names more);
2. runs them against the search tool (in parallel, within the run's tool-call budget);
3. keeps every new passage as evidence under the id the search server gave it;
4. reads the passages in view and judges whether they answer the task: the answer, which
   passages support it, and, when they do not, refined queries for the next round.

It stops when the passages suffice, when the rounds, the tool calls or the wall clock run out, or
when there is nothing new to ask. It returns the passages it relied on, so the Writer cites them.
A lookup of one entity of a comparison that the combining step reads entity by entity stops at the
first round whose passages name the whole entity, unread (:func:`~agents.combine.lookup_entity`).
A task that declares what it returns (a year, a number, a name) ends in that value, read by the
reader model from the passages (``agents/hop_read.py``): a later task computes with it, and the
executor model's sentence is no operand for a calculator. The reader reads each round's passages
first; only when it cannot tell does the executor model judge them and refine the queries.

The queries themselves (what counts as one, the model's sub-queries, the first round's) are
``agents/search_queries.py``.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import HumanMessage
from pydantic import BaseModel, BeforeValidator, Field

from agents.chain_answer import UNKNOWN
from agents.combine import lookup_entity
from agents.compare import names
from agents.evidence import search_evidence
from agents.hop_read import read_hop
from agents.search_queries import (
    MAX_SUBQUERIES,
    Queries,
    first_queries,
    goal_query,
    normalize_query,
    plan_query,
    write_subqueries,
)
from core.plan import REF_PATTERN, Task
from core.run import Run
from core.state import Evidence, TaskOutcome, TaskPayload
from models.errors import MODEL_ERRORS
from models.structured import structured_call
from prompts import render
from tools.hub import ToolOutcome, ToolSpec

log = logging.getLogger(__name__)

MAX_PASSAGES_IN_VIEW = 8
PASSAGE_CHARS_IN_VIEW = 450
FALLBACK_SOURCES = 3
MAX_ANSWER_CHARS = 400
SEARCHED_ONLY = "Passages found; they are read where the comparison is made."
VALUE_PASSAGES = 4  # what the reader reads for a task's value: the passages relied on, then the next


def _cut(value: Any) -> Any:
    """Unescape HTML entities (small models write ``&lt;`` for ``<``) and cut an over-long answer
    (an endpoint without grammars may not respect ``maxLength``)."""
    return html.unescape(value)[:MAX_ANSWER_CHARS] if isinstance(value, str) else value


class SearchVerdict(BaseModel):
    """The executor's reading of the passages in view: which help, what they say, whether it is
    enough, and what to search next. Sources come first (small models then write a real answer
    instead of an empty one); the answer's length is bounded so the reply fits the token budget."""

    sources: list[int]
    answer: Annotated[str, BeforeValidator(_cut), Field(max_length=MAX_ANSWER_CHARS)]
    sufficient: bool
    next_queries: Queries


@dataclass
class SearchProgress:
    """What the loop has gathered so far."""

    passages: dict[str, Evidence] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    calls: list[ToolOutcome] = field(default_factory=list)
    relied: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    value_read: tuple[str, ...] = ()  # the passages the reader last read for the task's value

    def new_queries(self, queries: list[str]) -> list[str]:
        """``queries`` without repeats and without those already asked (ignoring case and spacing)."""
        seen = {normalize_query(q) for q in self.asked}
        fresh = []
        for query in queries:
            key = normalize_query(query)
            if key and key not in seen:
                seen.add(key)
                fresh.append(query.strip())
        return fresh

    def relied_on(self) -> list[Evidence]:
        """The passages the judge (or the reader) relied on, in that order."""
        return [self.passages[pid] for pid in self.relied if pid in self.passages]

    def relied_evidence(self) -> list[Evidence]:
        """The passages the answer rests on; the top passages when the judge named none."""
        if self.relied:
            return self.relied_on()
        return list(self.passages.values())[:FALLBACK_SOURCES]


def _interleave(outcomes: list[ToolOutcome], task: Task) -> list[Evidence]:
    """Passages of several sub-query results, best ranks first (rank 1 of each, then rank 2, …)."""
    lists = [search_evidence(task, outcome) for outcome in outcomes if outcome.ok]
    merged: dict[str, Evidence] = {}
    for rank in range(max((len(items) for items in lists), default=0)):
        for items in lists:
            if rank < len(items):
                merged.setdefault(items[rank]["id"], items[rank])
    return list(merged.values())


def _fixed_args(task: Task, spec: ToolSpec, query_arg: str, k: int) -> dict[str, Any]:
    """The plan's arguments other than the query (collection, filters…), with ``k`` at least the
    search budget's: a plan's ``"k": 1`` is a guess that leaves the reader one passage, often the
    other entity's."""
    args = {
        key: value
        for key, value in (task.args or {}).items()
        if key != query_arg and not REF_PATTERN.search(json.dumps(value))
    }
    if "k" in spec.parameters.get("properties", {}):
        planned = args.get("k")
        args["k"] = max(planned, k) if isinstance(planned, int) and not isinstance(planned, bool) else k
    return args


def _view(progress: SearchProgress, fresh: list[Evidence]) -> list[Evidence]:
    """The passages the judge reads: those it relied on before, then this round's new ones."""
    kept = progress.relied_on()
    view = kept + [item for item in fresh if item not in kept]
    return view[:MAX_PASSAGES_IN_VIEW]


def _numbered(view: list[Evidence]) -> str:
    lines = []
    for n, item in enumerate(view, start=1):
        text = " ".join(item["content"].split())[:PASSAGE_CHARS_IN_VIEW]
        lines.append(f"[{n}] {item['title']}: {text}")
    return "\n".join(lines)


async def _judge(run: Run, task: Task, view: list[Evidence], inputs: str) -> SearchVerdict:
    prompt = render("executor_search_judge", goal=task.goal, inputs=inputs, passages=_numbered(view))
    top = view[0]["content"][:300] if view else ""
    result = await structured_call(
        run.model("executor"),
        [HumanMessage(content=prompt)],
        SearchVerdict,
        fallback=lambda errors: SearchVerdict(
            answer=top, sources=[1] if view else [], sufficient=bool(view), next_queries=[]
        ),
        constrain=run.settings.role("executor").constrain_json,
    )
    return result.value


async def _search_round(
    run: Run, qualified: str, queries: list[str], fixed: dict[str, Any], query_arg: str
) -> list[ToolOutcome]:
    timeout = run.settings.budgets.tool_timeout_s
    return list(
        await asyncio.gather(
            *(run.call_tool(qualified, {**fixed, query_arg: q}, timeout_s=timeout) for q in queries)
        )
    )


async def run_search_task(
    run: Run, task: Task, spec: ToolSpec, query_arg: str, payload: TaskPayload, inputs: str
) -> TaskOutcome:
    """Search in rounds until the passages answer the task or a budget runs out.

    Returns:
        The status (ok | incomplete | failed), the answer found or the error, the calls made, and
        the evidence relied on (passages with their search-server ids).
    """
    budgets = run.settings.budgets
    calls_left = max(payload["tool_calls_left"], 0)
    deadline = payload.get("deadline", float("inf"))
    fixed = _fixed_args(task, spec, query_arg, budgets.search_k)
    defaults = _fixed_args(task.model_copy(update={"args": {}}), spec, query_arg, budgets.search_k)
    progress = SearchProgress()
    entity = None if payload["parent_outputs"] else lookup_entity(payload["query"], task.goal)
    planned = plan_query(task, query_arg)
    queries = first_queries(task, planned) if planned else None
    if queries is None:  # the task itself is the first query: a floor under the model's sub-queries
        written = await _subqueries(run, task, inputs, progress)
        queries = [goal_query(task), *written]
    for round_index in range(budgets.max_executor_rounds):
        if progress.calls and time.time() >= deadline:
            log.info("task %s: the run's time budget ran out after %d call(s)", task.id, len(progress.calls))
            break
        if queries is None:
            queries = await _subqueries(run, task, inputs, progress)
        queries = progress.new_queries(queries)[: min(MAX_SUBQUERIES, calls_left - len(progress.calls))]
        if not queries:
            break
        progress.asked += queries
        outcomes = await _search_round(run, spec.name, queries, fixed, query_arg)
        room = calls_left - len(progress.calls) - len(outcomes)
        if fixed != defaults and room > 0 and not any(outcome.ok for outcome in outcomes):
            # the plan's own arguments (a collection the index does not hold) failed every call
            log.info("task %s: every call with %s failed; searching with the tool's defaults", task.id, fixed)
            fixed = defaults
            outcomes += await _search_round(run, spec.name, queries[:room], fixed, query_arg)
        progress.calls += outcomes
        fresh = [item for item in _interleave(outcomes, task) if item["id"] not in progress.passages]
        progress.passages.update((item["id"], item) for item in fresh)
        if not fresh:
            log.info("task %s round %d: nothing new for %s", task.id, round_index + 1, queries)
            queries = None
            continue
        # the whole name: half of it lets a lighthouse's "tower" stand for the Zephyr Tower
        if entity and (about := [item for item in progress.passages.values() if names(entity, item, 1.0)]):
            return _found(task, entity, progress, about)
        if task.declares_value() and (value := await _declared_value(run, task, progress, "")):
            # the reader found the value: the executor model's judgement would only be read over
            progress.relied = _holding(value, [progress.passages[pid] for pid in progress.value_read])
            return TaskOutcome("ok", value, None, progress.calls, progress.relied_evidence())
        view = _view(progress, fresh)
        verdict = await _judge(run, task, view, inputs)
        cited = [view[n - 1]["id"] for n in verdict.sources if 1 <= n <= len(view)]
        progress.relied = list(dict.fromkeys(cited)) or progress.relied
        if verdict.answer.strip():
            progress.answers.append(verdict.answer.strip())
        if verdict.sufficient and verdict.answer.strip():
            value = await _declared_value(run, task, progress, verdict.answer.strip())
            return TaskOutcome("ok", value, None, progress.calls, progress.relied_evidence())
        queries = verdict.next_queries or None
    outcome = _finish(task, progress)
    if outcome.status == "incomplete" and progress.passages:
        value = await _declared_value(run, task, progress, "")
        if value:  # the reader found the value the executor model did not see as enough
            return TaskOutcome("ok", value, None, progress.calls, progress.relied_evidence())
    return outcome


async def _declared_value(run: Run, task: Task, progress: SearchProgress, answer: str) -> str:
    """The value ``task`` declares it returns, read from the passages it found; ``answer`` (the
    executor model's reading) when the task declares none, the reader cannot tell, or fails."""
    if not task.declares_value():
        return answer
    relied = progress.relied_on()
    rest = [item for item in progress.passages.values() if item not in relied]
    passages = (relied + rest)[:VALUE_PASSAGES]
    ids = tuple(item["id"] for item in passages)
    if ids == progress.value_read:
        return answer  # read already, and the reader could not tell
    progress.value_read = ids
    question = f"{' '.join(task.goal.split())} ({task.returns.strip()})"
    try:
        value = await read_hop(run, question, passages)
    except MODEL_ERRORS as exc:
        log.warning("task %s: the reader could not read its value: %s", task.id, exc)
        return answer
    if value == UNKNOWN:
        return answer
    log.info("task %s returns %r (the executor read %r)", task.id, value, answer[:80])
    return value


def _found(task: Task, entity: str, progress: SearchProgress, about: list[Evidence]) -> TaskOutcome:
    """A comparison's lookup done at its search: the passages naming ``entity``, for the combining
    step (or the Writer) to read. Its output holds no number, which the combining step would take
    for the entity's value ("Sum 41")."""
    log.info("task %s: %d passage(s) name %r; the comparison reads them", task.id, len(about), entity)
    return TaskOutcome("ok", SEARCHED_ONLY, None, progress.calls, about[:VALUE_PASSAGES])


def _holding(value: str, passages: list[Evidence]) -> list[str]:
    """Ids of the passages that state ``value`` (the first passage read when none states it verbatim)."""
    needle = " ".join(value.lower().split())
    holding = [item["id"] for item in passages if needle in " ".join(item["content"].lower().split())]
    return holding or [item["id"] for item in passages[:1]]


async def _subqueries(run: Run, task: Task, inputs: str, progress: SearchProgress) -> list[str]:
    return await write_subqueries(
        run.model("executor"),
        task.goal,
        constrain=run.settings.role("executor").constrain_json,
        inputs=inputs,
        previous=_asked(progress),
    )


def _asked(progress: SearchProgress) -> str:
    if not progress.asked:
        return ""
    found = "; ".join(dict.fromkeys(e["title"] for e in progress.passages.values())) or "nothing"
    return (
        f"Already searched (not enough): {'; '.join(progress.asked)}. Found: {found[:300]}. Try other words."
    )


def _finish(task: Task, progress: SearchProgress) -> TaskOutcome:
    """The result when the budget ran out: incomplete with what was found, or failed with why."""
    if progress.passages:
        output = (
            progress.answers[-1]
            if progress.answers
            else "Related passages were found; none answers it fully."
        )
        return TaskOutcome("incomplete", output, None, progress.calls, progress.relied_evidence())
    errors = "; ".join(dict.fromkeys(call.error or "" for call in progress.calls if not call.ok))
    if errors:
        return TaskOutcome("failed", "", errors, progress.calls)
    if progress.calls:
        return TaskOutcome(
            "incomplete", f"No passages found for: {'; '.join(progress.asked)}", None, progress.calls
        )
    return TaskOutcome("failed", "", "no tool call was allowed by the budget", progress.calls)
