"""The Planner: turns a complex query into a DAG of sub-tasks over the candidate tools.

Seed 001 §3.4: one pass, reasoning first then a JSON sketch, validated (parseable, acyclic, ≤1 tool
per task, tool among the candidates, references declared). Invalid output gets one repair round
with the validator's errors, then a rule-based single-task fallback. Under the Master's direction
it re-plans locally (the failed tasks and their descendants are replaced; completed tasks and
their results are kept) or augments the DAG with new downstream tasks.

The first plan is streamed: its tasks start while it is still being written
(``agents/plan_stream.py``, LLMCompiler's task fetching); the prompt lives in ``agents/plan_prompt.py``.

Kept in one file (about 350 lines): the first plan, the local re-plan and the augmentation share
the prompt, the validation round, the renumbering and the state update.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any, Literal

import networkx as nx
from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from agents.id_deps import needs_of, wire_id_dependencies
from agents.plan_grounding import misfit_arguments, numeric_operands, uncombined_tasks, ungrounded_numbers
from agents.plan_prompt import PlanSketch, plan_prompt, sketch_model
from agents.plan_reuse import renamed, reuse_kept
from agents.plan_stream import early_results, early_start
from agents.tool_history import chain_hint
from core.events import PlanEvent, emit
from core.plan import Plan, PlanError, Task, current_plan, validate_plan
from core.run import RunContext, current_run
from core.state import CandidateTool, PlanEntry, PlanMode, SearchState, TaskResult
from models.structured import structured_call
from prompts import render
from tools.candidates import candidate
from tools.hub import ToolSpec

log = logging.getLogger(__name__)


def fallback_plan(
    query: str, candidates: list[CandidateTool], first_id: str = "t1", avoid: frozenset[str] = frozenset()
) -> list[Task]:
    """A single task over the top-ranked tool that has not failed and needs no identifier from
    another tool (or none): the last resort."""
    usable = [tool["name"] for tool in candidates if tool["name"] not in avoid and not tool.get("needs")]
    return [Task(id=first_id, goal=query, tool=usable[0] if usable else None, returns="the answer")]


def widen_candidates(
    candidates: list[CandidateTool], failed_tools: set[str], specs: dict[str, ToolSpec]
) -> list[CandidateTool]:
    """Swap failed tools for their backups (the other tools of their server) in the candidate set."""
    names = {tool["name"] for tool in candidates}
    servers = {name.partition(".")[0] for name in failed_tools}
    peers = list(specs.values())
    extra = [
        candidate(spec, peers, 0.0)
        for name, spec in sorted(specs.items())
        if spec.server in servers and name not in names and name not in failed_tools
    ]
    # the failed tools leave the boundary: the replacement must use a backup, another tool, or none
    return [tool for tool in [*candidates, *extra] if tool["name"] not in failed_tools]


def _normalise_tools(tasks: list[Task], candidates: list[CandidateTool]) -> list[Task]:
    """Map a tool written without its server prefix (``calculate``) to the unique candidate."""
    names = [tool["name"] for tool in candidates]
    fixed = []
    for task in tasks:
        if task.tool and task.tool not in names:
            matches = [
                name for name in names if name.split(".", 1)[-1] in {task.tool, task.tool.split("_", 1)[-1]}
            ]
            if len(matches) == 1:
                task = task.model_copy(update={"tool": matches[0]})
        fixed.append(task)
    return fixed


def _attach_augmentation(
    kept: list[Task], new_tasks: list[Task], incomplete: set[str]
) -> tuple[list[Task], list[Task]]:
    """Wire augmenting tasks into the DAG without ever closing a cycle.

    New tasks that name no dependency build on the incomplete tasks they complete, and tasks
    that were waiting for an incomplete result now also wait for the new tasks, except for a new
    task that itself builds (directly or not) on the waiting one: that one runs after it.
    """
    new_tasks = [
        task if task.deps else task.model_copy(update={"deps": sorted(incomplete)}) for task in new_tasks
    ]
    dag = Plan(tasks=[*kept, *new_tasks]).graph()
    rewired = []
    for task in kept:
        extra = []
        if incomplete & set(task.deps):
            for new in new_tasks:
                if not nx.has_path(dag, task.id, new.id):
                    dag.add_edge(new.id, task.id)
                    extra.append(new.id)
        rewired.append(task.model_copy(update={"deps": [*task.deps, *extra]}) if extra else task)
    return rewired, new_tasks


def _renumber(tasks: list[Task], taken: set[str]) -> list[Task]:
    """Give new tasks whose ids are already used (by kept or discarded tasks) fresh ids.

    Small models restart numbering at ``t1`` when re-planning. Dependencies and ``{{tN}}``
    references among the new tasks follow the renaming; a dependency on an id that no new task
    defines still means the kept task of that id.
    """
    mapping: dict[str, str] = {}
    used = set(taken) | {task.id for task in tasks}
    for task in tasks:
        if task.id in taken:
            mapping[task.id] = _fresh_id(used)
            used.add(mapping[task.id])
    return renamed(tasks, mapping)


def _fresh_id(taken: set[str]) -> str:
    index = 1
    while f"t{index}" in taken:
        index += 1
    return f"t{index}"


def _completed_summary(kept: list[Task], results: dict[str, TaskResult]) -> str:
    lines = [f"- {task.id}: {task.goal} -> {results[task.id]['output'][:300]}" for task in kept]
    return "\n".join(lines) or "(none)"


def publish(
    new_plan: Plan,
    mode: PlanMode,
    *,
    dropped: Iterable[str] = (),
    fallback: bool = False,
    errors: list[str] | None = None,
) -> dict[str, Any]:
    """Record a new plan version: its log entry, the ``plan`` stream event, and the state update."""
    entry: PlanEntry = {
        "version": new_plan.version,
        "mode": mode,
        "tasks": new_plan.model_dump()["tasks"],
        "dropped": sorted(dropped),
        "fallback": fallback,
        "errors": errors or [],
    }
    log.info("plan v%d (%s): %s", new_plan.version, mode, json.dumps(entry["tasks"])[:500])
    emit(PlanEvent(event="plan", **entry, waves=new_plan.waves()))
    return {"plan": new_plan.model_dump(), "plan_log": [entry]}


def single_task_plan(query: str, tool: str | None) -> dict[str, Any]:
    """The Executor route's plan: the query as one task over the top candidate tool (or none)."""
    return publish(
        Plan(tasks=[Task(id="t1", goal=query, tool=tool, returns="the answer")], version=1), "single"
    )


async def plan(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["dispatch", "review", "review_plan", "writer"]]:
    """Write the first plan, or re-plan / augment it as the Master's review directs.

    Every plan it publishes is a valid DAG. When not even the fallback fits the kept tasks, the
    run goes to the Writer with what exists, and the answer says that planning failed. With
    ``review_plan`` on, the first plan goes to a person first (``agents/plan_review.py``). With
    ``stream_plan`` on, tasks of the first plan start while it is written; their results go to
    the Master's review with the plan.
    """
    run = await current_run(runtime)
    budgets = run.settings.budgets
    candidates = state.get("candidate_tools", [])
    assessment = state.get("assessment", {})
    query = assessment.get("resolved_query") or state["query"]
    review = state.get("review")
    decision = review.get("decision") if review and state.get("plan") else None
    mode: PlanMode = decision if decision == "replan" or decision == "augment" else "plan"
    failed_ids = review.get("failed", []) if review else []
    incomplete_ids = review.get("incomplete", []) if review else []
    results = state.get("results", {})
    old = current_plan(state) or Plan(tasks=[], version=0)

    if mode == "plan":
        kept: list[Task] = []
        dropped: set[str] = set()
        context = ""
    elif mode == "replan":
        failed_tools = {tool for tid in failed_ids if (tool := old.by_id()[tid].tool)}
        candidates = widen_candidates(candidates, failed_tools, run.tools.specs)
        dropped = set(failed_ids)
        for task_id in list(dropped):
            dropped |= old.descendants(task_id)
        kept = [task for task in old.tasks if task.id not in dropped]
        failures = "\n".join(
            f"- {tid}: {old.by_id()[tid].goal} (tool {old.by_id()[tid].tool}) failed: {results[tid].get('error')}"
            for tid in failed_ids
            if tid in results
        )
        problem = (
            f"These tasks failed and must be replaced (with a different tool or approach; "
            f"use new ids, not {sorted(dropped)}):\n{failures}"
        )
        context = render(
            "planner_replan",
            completed=_completed_summary([t for t in kept if t.id in results], results),
            problem=problem,
        )
    else:  # augment
        dropped = set()
        kept = list(old.tasks)
        partial = "\n".join(
            f"- {tid}: {old.by_id()[tid].goal} -> {results[tid]['output'][:300]}"
            for tid in incomplete_ids
            if tid in results
        )
        problem = (
            "These results are incomplete. Add only NEW downstream tasks (new ids) that find what is "
            f"missing; they may depend on existing tasks:\n{partial}"
        )
        context = render(
            "planner_replan",
            completed=_completed_summary([t for t in kept if t.id in results], results),
            problem=problem,
        )

    kept_ids = {task.id for task in kept}
    failed_before = frozenset(
        r["tool"]
        for r in [*state.get("discarded", []), *results.values()]
        if r["status"] == "failed" and r["tool"]
    )
    room = max(1, budgets.max_tasks - len(kept))
    taken = kept_ids | set(results) | {r["task_id"] for r in state.get("discarded", [])}

    incomplete = set(incomplete_ids) if mode == "augment" else set()
    known = [results[task.id]["output"] for task in kept if task.id in results]

    def whole(new_tasks: list[Task]) -> Plan:
        """The next plan: the kept tasks and the new ones wired in, validated as one DAG."""
        rewired, wired = (
            _attach_augmentation(kept, new_tasks, incomplete) if incomplete else (kept, new_tasks)
        )
        return validate_plan(
            Plan(tasks=[*rewired, *wired], version=old.version + 1),
            candidate_tools=[tool["name"] for tool in candidates] + [t.tool for t in kept if t.tool],
            max_tasks=budgets.max_tasks + len(kept),
        )

    def check(sketch: PlanSketch) -> list[Task]:
        tasks = _renumber(_normalise_tools(list(sketch.tasks), candidates), taken)
        tasks, reused = reuse_kept(tasks, kept)  # a lookup written again is the one the run has
        if reused:
            log.info("plan (%s): new tasks that repeat kept ones: %s", mode, reused)
        if reused and not tasks:
            if mode == "augment":
                return []  # nothing more to look for: what the run found stands
            repeats = ", ".join(f"{new} repeats {old}" for new, old in reused.items())
            raise PlanError(
                [f"every task repeats one the plan already has ({repeats}); write only new tasks"]
            )
        tasks = wire_id_dependencies(tasks, needs_of(candidates), kept)  # no invented ids
        tasks = numeric_operands(tasks)  # a value a calculation takes is read as a number
        validate_plan(
            {"tasks": [t.model_dump() for t in tasks]},
            candidate_tools=[tool["name"] for tool in candidates],
            max_tasks=room,
            known_ids=kept_ids,
        )
        whole(tasks)  # the repair round also sees what joining the kept tasks would break
        schemas = {
            task.tool: run.tools.specs[task.tool].parameters for task in tasks if task.tool in run.tools.specs
        }
        problems = ungrounded_numbers(tasks, query, known, state.get("today", "")) + misfit_arguments(
            tasks, schemas
        )
        if mode == "plan":  # a first plan for one quantity computes it (re-plans keep earlier tasks)
            problems += uncombined_tasks(tasks, query)
        if problems:
            raise PlanError(problems)
        return tasks

    prompt = plan_prompt(
        today=state.get("today", ""),
        max_tasks=room,
        strategy=assessment.get("strategy", "parallel"),
        candidates=candidates,
        hint=chain_hint(run, [tool["name"] for tool in candidates]),
        context=context,
        query=query,
    )
    reviewed = mode == "plan" and run.settings.review_plan
    streamed = mode == "plan" and run.settings.stream_plan and not reviewed
    early = (
        early_start(
            run, state, candidates, old.version + 1, lambda task: _normalise_tools([task], candidates)[0]
        )
        if streamed
        else None
    )
    try:
        result = await structured_call(
            run.model("planner"),
            [HumanMessage(content=prompt)],
            sketch_model(room),
            check=check,
            fallback=lambda errors: fallback_plan(
                query,
                candidates,
                _fresh_id(taken | dropped),
                failed_before,
            ),
            constrain=run.settings.role("planner").constrain_json,
            on_text=early.feed if early is not None else None,
        )
    except BaseException:
        if early is not None:
            await early.cancel()
        raise
    finished = await early.finish() if early is not None else {}
    if mode == "augment" and not result.value:  # the incomplete results stand as they are
        log.info("augment: every new task repeats a kept one; the incomplete results stand")
        return Command(
            goto="review",
            update={"augmented": list(incomplete_ids), "replans": state.get("replans", 0) + 1},
        )
    try:
        new_plan = whole(result.value)
    except PlanError as exc:  # even the fallback does not fit: answer with what exists, say why
        log.warning("plan (%s) unusable: %s", mode, exc)
        thrown = [r for _, outcome in finished.values() for r in outcome["results"].values()]
        return Command(
            goto="writer", update={"missing": [f"a valid plan ({mode}: {exc})"], "discarded": thrown}
        )
    update = publish(new_plan, mode, dropped=dropped, fallback=result.fallback, errors=result.errors)
    early_update, thrown = early_results(finished, new_plan)
    if early_update["results"]:  # the streamed tasks were the first wave
        update |= early_update | {"waves": state.get("waves", 0) + 1}
    if thrown:
        update["discarded"] = thrown
    update["candidate_tools"] = candidates
    if mode != "plan":
        update["replans"] = state.get("replans", 0) + 1
    if mode == "augment":
        update["augmented"] = list(incomplete_ids)
    if dropped:
        update["results"] = Overwrite({tid: res for tid, res in results.items() if tid not in dropped})
        update["discarded"] = [results[tid] for tid in sorted(dropped) if tid in results]
    if reviewed:
        return Command(goto="review_plan", update=update)
    return Command(goto="review" if early_update["results"] else "dispatch", update=update)
