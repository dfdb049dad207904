"""SRSA's three search strategies as three ways of executing (seed 002; digest: seed-002-003).

The Master names a strategy; on the Executor route with a search tool each one runs differently:

* **direct** (``direct_search``): one retrieval of the question, then the Writer reads: the RAG
  path, for questions one passage answers.
* **parallel** (``parallel_search`` → ``search_branch`` ×N): one ``Send`` branch per entity or
  facet the question names, plus one for the question itself, all at once; the Writer then reads
  the passages of every branch together (comparisons: "which was born first, A or B").
* **serial** (``serial_search`` ⇄ ``next_hop``): IRCoT-style iterative retrieval. The first hop
  searches the question; after each hop the model reads what was found and either says it is
  enough or names what to look up next, and that becomes the next hop's query (bridge questions:
  find the bridge entity, then search it). Bounded by ``budgets.max_hops``.

Every search is a task of the plan (bound to the search tool, with its query and ``k`` as
arguments) and its passages are evidence under the search server's ids, so the Writer, the
trace and ``--json`` see the strategies' work like any other plan's.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from agents.evidence import search_evidence
from agents.planner import publish
from agents.task_result import finish_task
from agents.writer import format_sources, number_sources
from core.events import TaskStartEvent, emit
from core.plan import Plan, Task, current_plan, task_payload
from core.run import Run, RunContext, current_run
from core.state import (
    SearchState,
    Status,
    TaskOutcome,
    TaskPayload,
    resolved_query,
    task_evidence_ids,
    tool_calls_used,
)
from models.errors import MODEL_ERRORS, describe_model_error
from models.structured import message_text, strip_thinking
from prompts import render
from tools.hub import query_argument

log = logging.getLogger(__name__)

StrategyNode = Literal["direct_search", "parallel_search", "split_question"]
STRATEGY_NODES: dict[str, StrategyNode] = {
    "direct": "direct_search",
    "parallel": "parallel_search",
    "serial": "split_question",
}
LINK_TOOL = "follow_links"  # a search server's tool for the documents its passages name
FIRST_HOP_K = 3  # the first hop's top passages whose links the link hop follows
LINK_K = 2  # passages of the link hop
FACET_K = 2  # passages per entity branch of a parallel search
HOP_K = 3  # passages per later hop of a serial search (a bridge entity's article is in its top 2)
QUESTION_K_PARALLEL = 2  # passages of the question's own branch beside the entity branches
HOP_TOKENS = 24  # a next-hop reply is a name or DONE
MAX_HOP_WORDS = 12
DONE = re.compile(r"^\W*(done|none|n/?a|no(thing)?( more)?( needed)?)\b", re.IGNORECASE)


@dataclass(frozen=True)
class SearchTools:
    """The search tool a strategy calls, and what its server offers beside it."""

    search: str  # "server.tool"
    argument: str  # its query argument
    full: bool  # it returns whole passages on request (``full``), not only snippets
    follow: str | None  # the same server's link tool (``docsearch.follow_links``), if any


def search_tools(state: SearchState, run: Run) -> SearchTools | None:
    """The top candidate tool and what goes with it, when it is a search tool."""
    candidates = state.get("candidate_tools", [])
    if not candidates:
        return None
    spec = run.tools.specs.get(candidates[0]["name"])
    argument = query_argument(spec) if spec else None
    if spec is None or argument is None:
        return None
    return SearchTools(
        search=spec.name,
        argument=argument,
        full="full" in spec.parameters.get("properties", {}),
        follow=link_tool(run, spec.name),
    )


def link_tool(run: Run, search: str) -> str | None:
    """The link tool (``follow_links``) of the server that serves the tool ``search``, if any."""
    spec = run.tools.specs.get(search)
    follow = run.tools.specs.get(f"{spec.server}.{LINK_TOOL}") if spec else None
    return follow.name if follow else None


def search_task(task_id: str, query: str, tools: SearchTools, k: int, deps: list[str] | None = None) -> Task:
    """One search of a strategy as a plan task (whole passages when the tool can return them)."""
    args: dict[str, Any] = {tools.argument: query, "k": k} | ({"full": True} if tools.full else {})
    return Task(id=task_id, goal=query, tool=tools.search, args=args, deps=deps or [], returns="passages")


def follow_task(task_id: str, query: str, tools: SearchTools, after: str, passage_ids: list[str]) -> Task:
    """The link hop of a serial search: the documents that hop ``after``'s passages name."""
    return Task(
        id=task_id,
        goal=f"what the passages of {after} name",
        tool=tools.follow,
        args={"passage_ids": passage_ids, "query": query, "k": LINK_K, "full": True},
        deps=[after],
        returns="passages",
    )


async def run_search(run: Run, task: Task, plan_version: int) -> dict[str, Any]:
    """Call the task's search tool once; the result and its passages as a state update."""
    started = time.time()
    emit(TaskStartEvent(event="task_start", task_id=task.id, goal=task.goal, tool=task.tool, at=started))
    outcome = await run.call_tool(task.tool or "", task.args)
    evidence = search_evidence(task, outcome) if outcome.ok else []
    status: Status
    if not outcome.ok:
        status, error = "failed", outcome.error
    elif evidence:
        status, error = "ok", None
    else:
        status, error = "incomplete", None
    titles = "; ".join(dict.fromkeys(item["title"] for item in evidence))
    output = f"Found: {titles}" if evidence else (outcome.error or "no passages found")
    searched = TaskOutcome(status, output, error, [outcome], evidence)
    return finish_task(task, searched, started=started, plan_version=plan_version)


def _no_search_tool() -> dict[str, Any]:
    """The update when the run has no search tool: the Writer says so."""
    return {"missing": ["no search tool is available for this question"]}


async def direct_search(state: SearchState, runtime: Runtime[RunContext]) -> Command[Literal["writer"]]:
    """Direct: one retrieval of the question, then the Writer reads (the RAG path)."""
    run = await current_run(runtime)
    tools = search_tools(state, run)
    if tools is None:
        return Command(goto="writer", update=_no_search_tool())
    task = search_task("s1", resolved_query(state), tools, k=run.settings.budgets.search_k)
    update = publish(Plan(tasks=[task], version=1), "single")
    update |= await run_search(run, task, 1)
    return Command(goto="writer", update=update)


async def parallel_search(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["search_branch", "writer"]]:
    """Parallel: one search branch per entity the question names, plus the question, all at once."""
    run = await current_run(runtime)
    tools = search_tools(state, run)
    if tools is None:
        return Command(goto="writer", update=_no_search_tool())
    query = resolved_query(state)
    assessment = state.get("assessment")
    facets = list(dict.fromkeys((assessment.get("facets") if assessment else None) or []))
    facets = facets[: max(run.settings.budgets.max_parallel - 1, 1)]
    tasks = [search_task(f"s{i}", facet, tools, k=FACET_K) for i, facet in enumerate(facets, start=1)]
    question_k = QUESTION_K_PARALLEL if tasks else run.settings.budgets.search_k
    tasks.append(search_task(f"s{len(tasks) + 1}", query, tools, k=question_k))
    update = publish(Plan(tasks=tasks, version=1), "plan")
    deadline = state.get("started_at", time.time()) + run.settings.budgets.wall_clock_s
    sends = [
        Send(
            "search_branch",
            task_payload(
                task,
                {},
                query=state["query"],
                today=state.get("today", ""),
                plan_version=1,
                tool_calls_left=1,
                deadline=deadline,
            ),
        )  # fmt: skip
        for task in tasks
    ]
    return Command(goto=sends, update=update | {"waves": state.get("waves", 0) + 1})


async def search_branch(state: TaskPayload, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """One branch of a parallel search: a single search call, its passages kept as evidence."""
    run = await current_run(runtime)
    return await run_search(run, Task.model_validate(state["task"]), state["plan_version"])


async def serial_search(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["serial_search", "next_hop", "writer"]]:
    """Serial, for a question kept whole (``agents/hop_chain.py`` splits it first): run the next
    hop, the first searching the question itself.

    When the search server can follow links, the second hop takes the documents that the first
    hop's top passages name (no model call), and the Writer reads those top passages, the linked
    ones and, while fewer than ``search_k``, the first hop's next ones; otherwise, and after it,
    the model names the next search (``next_hop``).
    """
    run = await current_run(runtime)
    tools = search_tools(state, run)
    if tools is None:
        return Command(goto="writer", update=_no_search_tool())
    plan = current_plan(state)
    tasks = list(plan.tasks) if plan else []
    query = state.get("next_query") if tasks else None
    results = state.get("results", {})
    if not tasks:
        task = search_task("h1", resolved_query(state), tools, k=run.settings.budgets.search_k)
    elif tools.follow and all(t.tool != tools.follow for t in tasks):
        found = task_evidence_ids(state, tasks[-1].id)[:FIRST_HOP_K]
        task = follow_task(f"h{len(tasks) + 1}", resolved_query(state), tools, tasks[-1].id, found)
    elif query:
        task = search_task(f"h{len(tasks) + 1}", query, tools, k=HOP_K, deps=[tasks[-1].id])
    else:
        return Command(goto="writer")
    update = publish(Plan(tasks=[*tasks, task], version=1), "single" if not tasks else "augment")
    update |= await run_search(run, task, 1)
    found_now = update["results"][task.id]["evidence_ids"]
    if task.tool == tools.follow and tasks:
        first = results[tasks[-1].id]
        kept = passages_beside_links(first["evidence_ids"], found_now, run.settings.budgets.search_k)
        update["results"][first["task_id"]] = {**first, "evidence_ids": kept}
    link_next = tools.follow is not None and not tasks and bool(found_now)
    return Command(goto="serial_search" if link_next else "next_hop", update=update | {
        "waves": state.get("waves", 0) + 1, "next_query": None,
    })  # fmt: skip


def passages_beside_links(first: list[str], linked: list[str], total: int) -> list[str]:
    """The first hop's passages the Writer reads beside the linked ones.

    Its top ``FIRST_HOP_K`` (what the links were followed from), then as many of its next ones as
    fit in ``total`` beside the linked passages: when the passages name few indexed documents, the
    Writer still reads as many passages as a direct search gives.
    """
    top = first[:FIRST_HOP_K]
    room = total - len(set(top) | set(linked))
    rest = [pid for pid in first[FIRST_HOP_K:] if pid not in linked]
    return top + rest[: max(room, 0)]


def hop_query(reply: str, question: str, asked: list[str]) -> str | None:
    """The next hop's query from the model's reply, or None when it says the sources suffice.

    A reply that repeats the question or an earlier hop, or is too long to be a name, ends the
    chain too: another search with it would only find the same passages.
    """
    line = next((line.strip() for line in strip_thinking(reply).splitlines() if line.strip()), "")
    line = re.sub(r"^(next|search|query|look ?up|name)\s*:\s*", "", line, flags=re.IGNORECASE)
    line = line.strip(" .\"'`*")
    if not line or DONE.match(line) or len(line.split()) > MAX_HOP_WORDS:
        return None
    seen = {" ".join(q.lower().split()) for q in [question, *asked]}
    return None if " ".join(line.lower().split()) in seen else line


async def next_hop(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["serial_search", "writer"]]:
    """After a hop: the model reads the passages so far and names what to look up next, or stops.

    The prompt starts with the same numbered sources the Writer will read, so the local server's
    prompt cache serves the Writer's prefix. Stops at ``budgets.max_hops``, the tool-call budget,
    the wall clock, or when the last hop found nothing new.
    """
    run = await current_run(runtime)
    budgets = run.settings.budgets
    plan = current_plan(state) or Plan()
    results = state.get("results", {})
    last = results.get(plan.tasks[-1].id) if plan.tasks else None
    out_of_time = time.time() - state.get("started_at", time.time()) > budgets.wall_clock_s
    if (
        len(plan.tasks) >= budgets.max_hops
        or tool_calls_used(state) >= budgets.max_tool_calls
        or out_of_time
        or not last
        or not last["evidence_ids"]
    ):
        return Command(goto="writer", update={"next_query": None})
    sources = format_sources(number_sources(state))
    prompt = render("serial_next_hop", sources=sources, query=resolved_query(state))
    model = run.model("master").bind(max_tokens=HOP_TOKENS, temperature=0)
    system = SystemMessage(content=render("reader_system"))  # the Writer's: one cached prefix for both
    try:
        reply = await model.ainvoke([system, HumanMessage(content=prompt)])
    except MODEL_ERRORS as exc:  # the answer goes on without a hop
        problem = describe_model_error(exc)
        log.warning("next-hop decision failed (%s); writing from %d hop(s)", problem, len(plan.tasks))
        return Command(
            goto="writer", update={"next_query": None, "missing": [f"a further search step ({problem})"]}
        )
    query = hop_query(message_text(reply), resolved_query(state), [task.goal for task in plan.tasks])
    log.info("next hop after %d: %r", len(plan.tasks), query)
    if query is None:
        return Command(goto="writer", update={"next_query": None})
    return Command(goto="serial_search", update={"next_query": query})
