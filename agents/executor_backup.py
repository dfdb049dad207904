"""Backup tools inside the Executor: a failed call is retried, then switched to a toolkit peer.

Seed 001 §2 and §3.3.2: a tool that errors, times out or returns an empty or unreadable result
does not fail its task at once. The call is retried per ``budgets.tool_retries`` (errors only: a
hang would cost another full timeout), then the best-ranked peers of the tool's toolkit
(``tools/toolkits.py``) whose descriptions are at least ``backup_similarity`` alike are tried in
turn (the better success record first, ``tools/tool_graph.py``, then the more similar), at most ``budgets.tool_backups`` of them, each with the
arguments mapped through its own schema: by argument name when that fills the peer's schema, else
written by the executor model and validated against it. Every switch is logged, emitted on the
event stream and kept in the task's result; the task fails only when every backup failed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import HumanMessage
from pydantic import BaseModel, ValidationError

from agents.tool_history import run_history
from core.events import ToolSwitchEvent, emit
from core.plan import Task
from core.run import Run
from core.state import ToolSwitch
from models.structured import StructuredOutputError, structured_call
from prompts import render
from tools.hub import ToolOutcome, ToolSpec
from tools.schema import type_label
from tools.tool_graph import ranked_backups
from tools.toolkits import Toolkits, load_toolkits

log = logging.getLogger(__name__)
UNREADABLE_SHARE = 0.2  # an output with more control or replacement characters than this is garbage
# held in the worker thread (an asyncio lock would be bound to one event loop): one computation at a time
_TOOLKITS_LOCK = threading.Lock()


def failure_reason(outcome: ToolOutcome) -> str | None:
    """Why a call's outcome is no result (an error, an empty or unreadable output), or None."""
    if not outcome.ok:
        return outcome.error or "the call failed"
    text = outcome.output.strip()
    if not text:
        return "the tool returned an empty result"
    bad = sum(
        1 for ch in text if ch == "\ufffd" or (unicodedata.category(ch)[0] == "C" and ch not in "\n\r\t")
    )
    if bad / len(text) > UNREADABLE_SHARE:
        return "the tool returned an unreadable result"
    return None


def _timed_out(outcome: ToolOutcome) -> bool:
    return "timed out after" in (outcome.error or "")


def name_mapped_args(args: dict[str, Any], target: ToolSpec, model: type[BaseModel]) -> dict[str, Any] | None:
    """``args`` for ``target`` without a model: same-named arguments, or one text argument to the
    peer's only required text argument; None when that does not satisfy ``target``'s schema."""
    properties = target.parameters.get("properties", {})
    mapped = {name: value for name, value in args.items() if name in properties}
    required = list(target.parameters.get("required", []))
    texts = [value for value in args.values() if isinstance(value, str)]
    missing = [name for name in required if name not in mapped]
    if (
        len(missing) == 1
        and len(required) == 1
        and len(texts) == 1
        and "string" in type_label(properties[missing[0]])
    ):
        mapped[missing[0]] = texts[0]
    try:
        return model.model_validate(mapped).model_dump(by_alias=True, exclude_none=True)
    except ValidationError:
        return None


async def model_mapped_args(
    run: Run, task: Task, args: dict[str, Any], source: str, target: ToolSpec, model: type[BaseModel]
) -> dict[str, Any] | None:
    """``args`` rewritten for ``target`` by the executor model, validated against its schema."""
    prompt = render(
        "executor_map_args",
        goal=task.goal,
        source=source,
        args=json.dumps(args, ensure_ascii=False),
        tool=target.name,
        description=target.description.split("\n")[0],
        schema=json.dumps(target.brief()["args"]),
    )
    try:
        result = await structured_call(
            run.model("executor"),
            [HumanMessage(content=prompt)],
            model,
            constrain=run.settings.role("executor").constrain_json,
        )
    except StructuredOutputError as exc:
        log.info("could not map %s's arguments to %s: %s", source, target.name, exc)
        return None
    return result.value.model_dump(by_alias=True, exclude_none=True)


async def run_toolkits(run: Run) -> Toolkits:
    """The run's toolkits, from the cache or computed once (in a thread: it embeds)."""
    specs = list(run.tools.specs.values())
    known = set(run.toolkits.descriptions) if run.toolkits else set()
    if run.toolkits is None or not {spec.name for spec in specs} <= known:
        from tools.index.remote_embedder import routing_embedder

        settings = run.settings

        def load() -> tuple[Toolkits, bool]:
            with _TOOLKITS_LOCK:
                return load_toolkits(
                    specs, routing_embedder(), k=settings.toolkit_k, seed=settings.toolkit_seed
                )

        toolkits, computed = await asyncio.to_thread(load)
        log.info("toolkits %s: %d groups", "computed" if computed else "loaded", len(toolkits.groups))
        run.toolkits = toolkits
    return run.toolkits


@dataclass
class ResilientCall:
    """The calls one logical tool call took, its last outcome, and the switches to backups."""

    outcome: ToolOutcome
    calls: list[ToolOutcome] = field(default_factory=list)
    switches: list[ToolSwitch] = field(default_factory=list)


async def call_with_backups(
    run: Run,
    task: Task,
    tool: str,
    args: dict[str, Any],
    *,
    max_calls: int,
    arg_models: Callable[[ToolSpec], type[BaseModel]],
) -> ResilientCall:
    """Call ``tool``; on failure retry it, then switch to its toolkit's peers, within ``max_calls``.

    Args:
        run: The run (its hub, settings, executor model and toolkits).
        task: The task the call serves (for the model's argument mapping).
        tool: The qualified tool name.
        args: Its arguments.
        max_calls: The most calls this may make (the run's tool-call budget left), at least 1.
        arg_models: ``args_model`` of the executor (a tool spec -> its Pydantic argument model).

    Returns:
        The last outcome (failed with the reason when no call produced a result), every call, and
        the switches made.
    """
    budgets = run.settings.budgets
    hub = run.tools
    call = ResilientCall(await _checked_call(run, tool, args))
    call.calls.append(call.outcome)
    retries = budgets.tool_retries
    while failure_reason(call.outcome) and retries > 0 and len(call.calls) < max_calls:
        if _timed_out(call.outcome):
            break
        retries -= 1
        log.info("task %s: retrying %s after: %s", task.id, tool, failure_reason(call.outcome))
        call.outcome = await _checked_call(run, tool, args)
        call.calls.append(call.outcome)
    if not failure_reason(call.outcome) or budgets.tool_backups == 0:
        return call
    toolkits = await run_toolkits(run)
    peers = [peer for peer in toolkits.peers(tool, run.settings.backup_similarity) if peer in hub.specs]
    counts = await asyncio.to_thread(run_history(run).tool_counts)
    peers = ranked_backups(peers, toolkits.similarity.get(tool, {}), counts)[: budgets.tool_backups]
    current = tool
    for peer in peers:
        if len(call.calls) >= max_calls:
            break
        spec = hub.specs[peer]
        model = arg_models(spec)
        mapped = name_mapped_args(args, spec, model)
        how: Literal["name", "model"] = "name"
        if mapped is None:
            mapped, how = await model_mapped_args(run, task, args, tool, spec, model), "model"
        if mapped is None:
            continue
        reason = failure_reason(call.outcome) or "failed"
        switch = ToolSwitch(from_tool=current, to_tool=peer, reason=reason, args=mapped, mapped_by=how)
        call.switches.append(switch)
        log.warning("task %s: %s failed (%s); switching to its backup %s", task.id, current, reason, peer)
        announce(ToolSwitchEvent(event="tool_switch", task_id=task.id, **switch))
        call.outcome = await _checked_call(run, peer, mapped)
        call.calls.append(call.outcome)
        current = peer
        if not failure_reason(call.outcome):
            break
    return call


def announce(event: ToolSwitchEvent) -> None:
    """Emit ``event`` on the graph's stream; outside a graph (``aisearch bench faults``) there is none."""
    try:
        emit(event)
    except RuntimeError:
        log.debug("no stream to emit %s on", event["event"])


async def _checked_call(run: Run, tool: str, args: dict[str, Any]) -> ToolOutcome:
    """One call, an empty or unreadable "success" turned into a failure with the reason."""
    outcome = await run.call_tool(tool, args)
    reason = failure_reason(outcome)
    if outcome.ok and reason:
        outcome.ok, outcome.error, outcome.output = False, f"tool {outcome.tool}: {reason}", ""
    return outcome
