"""The Executor: runs one sub-task, with its bound tool through MCP or with the model alone.

Seed 001 §2 and TURA: for a task bound to a tool the executor model writes the tool arguments
(no thought: TURA's distilled executor acts directly), the tool is called through MCP, and the
Master's model judges whether the output achieves the task (seed 001 §3.5: the Master evaluates
the completeness of each sub-task's outcome; a value from a closed-world tool, such as a
calculator's number, stands without a judge); if not the executor may refine the arguments and call
again, within a bounded number of rounds. A task bound to a search tool runs the search loop of
``agents/executor_search.py`` (sub-queries, rounds, sufficiency, refinement). A tool-free task is
computed by the model. Each result
records its status (ok | failed | incomplete), output, evidence with stable ids, tool calls and
timings.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, Field, create_model

from agents.combine import (
    bare_numbers,
    calculator_for,
    combining_inputs,
    settled_comparison,
    words_for_calculator,
)
from agents.evidence import evidence_id, tool_evidence
from agents.executor_backup import call_with_backups
from agents.executor_rebind import Binding, rebind, rebinding_switch, task_reach
from agents.executor_search import run_search_task
from agents.task_result import finish_task
from agents.tool_history import record_task
from core.events import TaskStartEvent, emit
from core.plan import REF_PATTERN, Task, substitute
from core.run import Run, RunContext, current_run
from core.state import Evidence, Status, TaskOutcome, TaskPayload, ToolSwitch
from models.structured import StructuredOutputError, structured_call
from prompts import render
from tools.cache.tool_calls import canonical_args
from tools.hub import ToolOutcome, ToolSpec, query_argument
from tools.schema import python_type

log = logging.getLogger(__name__)


class Judgement(BaseModel):
    """The verdict on a tool output: the task's answer read from it, then whether it is enough.

    Reading comes before deciding: asked for the verdict first, the 0.5B executor model said "not
    enough" to nearly every right output on llama-server and "enough" to every one, wrong ones
    included, on llama-cpp-python (docs/results.md), so the Master's 1.5B judges.
    """

    result: str = ""
    sufficient: bool
    retry_args: dict[str, Any] | None = None


class Computed(BaseModel):
    """The executor's answer to a tool-free task."""

    result: str
    complete: bool = True


def args_model(spec: ToolSpec) -> type[BaseModel]:
    """A Pydantic model of a tool's input schema, for constrained decoding and validation.

    A JSON property may be named anything (``class``, ``max-results``, ``_id``, ``model_dump``),
    so each field gets a neutral Python name and the property's name as its alias: validation, the
    JSON schema and :func:`tool_args` all use the original names.
    """
    properties = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    fields: dict[str, Any] = {}
    for index, (name, prop) in enumerate(properties.items()):
        kind = python_type(prop)
        if name in required:
            fields[f"arg{index}"] = (kind, Field(alias=name, title=name))
        else:
            fields[f"arg{index}"] = (kind | None, Field(prop.get("default"), alias=name, title=name))
    return create_model(
        f"{spec.name.replace('.', '_')}_args", __config__=ConfigDict(extra="ignore"), **fields
    )


def tool_args(value: BaseModel) -> dict[str, Any]:
    """The arguments of a validated :func:`args_model` instance, under the tool's own names."""
    return value.model_dump(by_alias=True, exclude_none=True)


def _inputs_text(parent_outputs: dict[str, str]) -> str:
    if not parent_outputs:
        return ""
    return "Inputs from earlier tasks:\n" + "\n".join(
        f"- {tid}: {out[:500]}" for tid, out in parent_outputs.items()
    )


def numbers_by_id(args: dict[str, Any], parent_outputs: dict[str, str]) -> dict[str, Any]:
    """``args`` with the earlier tasks' outputs filled in: a ``{{t2}}`` reference as the plan writes
    it (:func:`core.plan.substitute`), then a bare ``t2`` (the executor model is shown its inputs by
    id: ``"t2 - t1"``) when that output is a bare number."""
    filled: dict[str, Any] = substitute(args, parent_outputs)
    numbers = bare_numbers(parent_outputs)
    if not numbers:
        return filled
    pattern = re.compile(r"\b(" + "|".join(re.escape(tid) for tid in numbers) + r")\b")
    return {
        key: pattern.sub(lambda m: numbers[m.group(1)], value) if isinstance(value, str) else value
        for key, value in filled.items()
    }


def _written_out(args: dict[str, Any]) -> bool:
    """Whether the plan wrote ``args`` out in full (no ``{{tN}}`` left to fill)."""
    return bool(args) and not REF_PATTERN.search(json.dumps(args))


def _complete_args(task: Task, model: type[BaseModel]) -> dict[str, Any] | None:
    """The plan's own arguments when they already satisfy the schema with every reference filled."""
    if not _written_out(task.args):
        return None
    try:
        return tool_args(model.model_validate(task.args))
    except ValueError:
        return None


async def _write_args(
    run: Run, task: Task, spec: ToolSpec, payload: TaskPayload, previous: str, reach: Sequence[ToolSpec]
) -> Binding:
    """The executor model's arguments for ``spec``; a reply that does not fit ``spec`` but fits a
    tool of ``reach`` goes to that tool, with no repair round (``agents/executor_rebind.py``)."""
    model = args_model(spec)
    prompt = render(
        "executor_args",
        today=payload["today"],
        goal=task.goal,
        inputs=_inputs_text(payload["parent_outputs"]),
        tool=spec.name,
        description=spec.description.split("\n")[0],
        schema=json.dumps(spec.brief()["args"]),
        previous=previous,
    )
    hint = f"\nSuggested arguments: {json.dumps(task.args)}" if task.args else ""
    result = await structured_call(
        run.model("executor"),
        [HumanMessage(content=prompt + hint)],
        model,
        salvage=lambda found: rebind(found, spec, reach, args_model),
        constrain=run.settings.role("executor").constrain_json,
    )
    value = result.value
    return value if isinstance(value, Binding) else Binding(spec, tool_args(value))


async def _judge(run: Run, task: Task, outcome: ToolOutcome) -> Judgement:
    prompt = render("executor_judge", goal=task.goal, output=outcome.output[:3000])
    result = await structured_call(
        run.model("master"),
        [HumanMessage(content=prompt)],
        Judgement,
        fallback=lambda errors: Judgement(sufficient=bool(outcome.output.strip())),
        constrain=run.settings.role("master").constrain_json,
    )
    return result.value


VALUE_CHARS = 100  # a tool output this short, on one line, is a value: nothing to read out of it


def computed_value(spec: ToolSpec, output: str) -> str | None:
    """The output of a read-only, closed-world tool when it is a value (a calculator's number, a
    date): it follows from the arguments alone, so the judge has nothing to read out of it and a
    retry with the same arguments returns it again. Open-world tools and documents are judged."""
    value = output.strip()
    if spec.cacheable and value and len(value) <= VALUE_CHARS and "\n" not in value:
        return value
    return None


def stated_result(judgement: Judgement, output: str) -> str:
    """The judge's reading of ``output`` when the output states it, else the output itself.

    A model's reading that the output does not contain ("Yes", a number it made up) never stands
    for what the tool said.
    """
    reading = " ".join(judgement.result.lower().split())
    if reading and reading in " ".join(output.lower().split()):
        return judgement.result.strip()
    return output


async def run_tool_task(run: Run, task: Task, payload: TaskPayload) -> TaskOutcome:
    """Write arguments, call the tool, judge, refine."""
    hub = run.tools
    budgets = run.settings.budgets
    qualified = hub.resolve(task.tool or "")
    if qualified is None:
        return TaskOutcome("failed", "", f"tool {task.tool!r} is not available")
    spec = hub.specs[qualified]
    query_arg = query_argument(spec)
    if query_arg is not None:
        inputs = _inputs_text(payload["parent_outputs"])
        return await run_search_task(run, task, spec, query_arg, payload, inputs)
    calls: list[ToolOutcome] = []
    switches: list[ToolSwitch] = []
    evidence: list[Evidence] = []
    results: list[str] = []
    reach = task_reach(hub, spec, payload.get("candidates", []))
    args = _complete_args(task, args_model(spec))
    bound = rebind(task.args, spec, reach, args_model) if args is None and _written_out(task.args) else None
    if bound is not None:
        args = dict(task.args)  # they fit another tool within reach: the call goes there below
    previous = ""
    tried: set[tuple[str, str]] = set()
    rounds = min(budgets.max_executor_rounds, max(payload["tool_calls_left"], 0))
    deadline = payload.get("deadline", float("inf"))
    for round_index in range(rounds):
        if calls and len(calls) >= payload["tool_calls_left"]:
            break  # retries and backups spent the task's share of the tool-call budget
        if calls and time.time() >= deadline:
            log.info("task %s: the run's time budget ran out after %d call(s)", task.id, len(calls))
            break
        if args is None:
            try:
                binding = await _write_args(run, task, spec, payload, previous, reach)
            except StructuredOutputError as exc:
                return TaskOutcome(
                    "failed", "", f"could not write arguments for {qualified}: {exc}", calls, evidence
                )
        else:  # the plan's or the judge's: they may fit another tool than the bound one
            binding = bound or rebind(args, spec, reach, args_model) or Binding(spec, args)
            bound = None
        if binding.spec is not spec:
            switches.append(rebinding_switch(task, spec, binding))
            spec, qualified = binding.spec, binding.spec.name
            reach = task_reach(hub, spec, payload.get("candidates", []))
        args = numbers_by_id(binding.args, payload["parent_outputs"])
        attempt = (qualified, canonical_args(args))
        if attempt in tried:  # the same call again would end the same way: the task ends here
            log.info("task %s: %s was already called with %s", task.id, qualified, json.dumps(args)[:200])
            break
        tried.add(attempt)
        left = payload["tool_calls_left"] - len(calls)
        resilient = await call_with_backups(
            run, task, qualified, args, max_calls=max(left, 1), arg_models=args_model
        )
        calls.extend(resilient.calls)
        switches.extend(resilient.switches)
        outcome = resilient.outcome
        if not outcome.ok:
            previous = f"Previous call {json.dumps(args)} failed: {outcome.error}. Write different arguments."
            args = None
            continue
        evidence.extend(item for item in tool_evidence(task, outcome) if item not in evidence)
        value = computed_value(spec, outcome.output)
        if value is not None:
            return TaskOutcome("ok", value, None, calls, evidence, switches)
        last_round = round_index == rounds - 1
        judgement = await _judge(run, task, outcome)
        if judgement.sufficient:
            result = stated_result(judgement, outcome.output)
            return TaskOutcome("ok", result, None, calls, evidence, switches)
        # not enough: what the tool said stands, not the judge's reading ("The output does not…")
        results.append(outcome.output)
        if last_round:
            break
        args = judgement.retry_args or None
        previous = f"Previous call {json.dumps(outcome.args)} returned: {outcome.output[:500]} (not enough)."
    if results:
        return TaskOutcome("incomplete", "\n".join(results), None, calls, evidence, switches)
    errors = (
        "; ".join(dict.fromkeys(call.error or "" for call in calls))
        or "no tool call was allowed by the budget"
    )
    return TaskOutcome("failed", "", errors, calls, evidence, switches)


async def run_model_task(run: Run, task: Task, payload: TaskPayload) -> TaskOutcome:
    """Solve a tool-free task with the executor model; its answer is cited as model knowledge."""
    prompt = render(
        "executor_compute",
        today=payload["today"],
        query=payload["query"],
        goal=task.goal,
        returns=task.returns or "a short answer",
        inputs=_inputs_text(payload["parent_outputs"]),
    )
    try:
        result = await structured_call(
            run.model("executor"),
            [HumanMessage(content=prompt)],
            Computed,
            constrain=run.settings.role("executor").constrain_json,
        )
    except StructuredOutputError as exc:
        return TaskOutcome("failed", "", f"the executor model gave no usable answer: {exc}")
    computed = result.value
    model_name = run.settings.role("executor").model
    evidence = Evidence(
        id=evidence_id("model", task.goal, computed.result),
        kind="model",
        title=task.goal,
        source=f"model:{model_name}",
        content=computed.result,
        task_id=task.id,
    )
    status: Status = "ok" if computed.complete and computed.result.strip() else "incomplete"
    return TaskOutcome(status, computed.result, None, evidence=[evidence])


async def execute_task(state: TaskPayload, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Run one task of the plan (one ``Send`` branch) and report its result and evidence."""
    return await run_task(await current_run(runtime), state)


async def run_task(run: Run, payload: TaskPayload) -> dict[str, Any]:
    """Run one task and return the state update of its result and evidence.

    The body of an ``execute_task`` branch, also used for a task the Planner starts while its plan
    is still streaming (``agents/plan_stream.py``).
    """
    task = Task.model_validate(payload["task"])
    started = time.time()
    combining = combining_inputs(run, task, payload)
    if combining is not None:  # announced before any reading: that takes a model call per entity
        emit(TaskStartEvent(event="task_start", task_id=task.id, goal=task.goal, tool=task.tool, at=started))
        settled = await settled_comparison(run, task, payload["query"], *combining)
        if settled is not None:  # no tool call and no executor call: nothing to record in the tool history
            return finish_task(task, settled, started=started, plan_version=payload["plan_version"])
    if words_for_calculator(run, task):
        log.info("task %s: the calculator was given words; the executor model reads the inputs", task.id)
        task = task.model_copy(update={"tool": None, "args": {}})
    calculator = calculator_for(run, task, payload)
    if calculator is not None:
        log.info("task %s computes from numbers with no tool: bound to %s", task.id, calculator)
        task = task.model_copy(update={"tool": calculator, "args": {}})
    if combining is None:
        emit(TaskStartEvent(event="task_start", task_id=task.id, goal=task.goal, tool=task.tool, at=started))
    if task.tool:
        outcome = await run_tool_task(run, task, payload)
    else:
        outcome = await run_model_task(run, task, payload)
    await record_task(run, task, payload, outcome)
    return finish_task(task, outcome, started=started, plan_version=payload["plan_version"])
