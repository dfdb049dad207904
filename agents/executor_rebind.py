"""Arguments that fit another tool: the Executor calls the tool whose schema they fit.

Retrieval can bind a task to a near neighbour of the tool it needs, and a small executor model then
writes the arguments the task calls for, not the ones the bound tool takes: bound to
``clock.shift_date`` for "how many days between 2024-03-01 and 2024-12-25?", the 0.5B wrote a
start and an end date, the date difference's arguments; shift_date rejected them and its toolkit
backup, ``clock.now`` (no required argument), answered with today's date. So when arguments do not
validate against the bound tool's schema but do against another tool within the task's reach (the
run's candidate tools, then the bound tool's server's), the call goes to that tool, before any
retry or backup, and the switch is logged and kept with the task's result.

Arguments fit a tool when each name is one of its properties (the same name first; failing that,
the one property whose words a name holds or is held by, ``start_date`` for ``start``, no two names
on one property), every required property is given, and the values validate against its model.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.executor_backup import announce
from core.events import ToolSwitchEvent
from core.plan import Task
from core.state import ToolSwitch
from tools.hub import ToolHub, ToolSpec, query_argument

log = logging.getLogger(__name__)
ArgModels = Callable[[ToolSpec], type[BaseModel]]
_WORD = re.compile(r"[a-z]+|[0-9]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


@dataclass(frozen=True)
class Binding:
    """The tool a call goes to and its arguments, as that tool names them."""

    spec: ToolSpec
    args: dict[str, Any]


def name_words(name: str) -> frozenset[str]:
    """The words of an argument name (``startDate``, ``start_date``, ``start-date``: start, date)."""
    return frozenset(_WORD.findall(_CAMEL.sub(r"\1 \2", name).lower()))


def renamed(args: Mapping[str, Any], properties: Mapping[str, Any], *, loose: bool) -> dict[str, Any] | None:
    """``args`` under ``properties``' names: each name as it is, or (``loose``) the one property
    whose words it holds or is held by; None when a name has no such property or two land on one."""
    out: dict[str, Any] = {}
    for name, value in args.items():
        words = name_words(name)
        near = [p for p in properties if words and (name_words(p) <= words or words <= name_words(p))]
        target = name if name in properties else near[0] if loose and len(near) == 1 else None
        if target is None or target in out:
            return None
        out[target] = value
    return out


def fitted(
    args: Mapping[str, Any], spec: ToolSpec, model: type[BaseModel], *, loose: bool
) -> dict[str, Any] | None:
    """``args`` as ``spec`` takes them when they fit its schema (module docstring), else None."""
    properties = spec.parameters.get("properties", {})
    mapped = renamed(args, properties, loose=loose) if args else None
    if mapped is None or not set(spec.parameters.get("required", [])) <= set(mapped):
        return None
    try:
        return model.model_validate(mapped).model_dump(by_alias=True, exclude_none=True)
    except ValidationError:
        return None


def task_reach(hub: ToolHub, bound: ToolSpec, candidates: Sequence[str]) -> list[ToolSpec]:
    """The tools a task's arguments may move to: the run's candidates in their order, then the bound
    tool's server's; neither the bound tool nor a search tool (those run the search loop)."""
    server = [name for name, spec in hub.specs.items() if spec.server == bound.server]
    names = [name for name in dict.fromkeys([*candidates, *server]) if name in hub.specs]
    return [hub.specs[n] for n in names if n != bound.name and query_argument(hub.specs[n]) is None]


def rebind(args: Any, bound: ToolSpec, reach: Sequence[ToolSpec], arg_models: ArgModels) -> Binding | None:
    """Where ``args`` should go when they do not validate against ``bound``: the first tool of
    ``reach`` they fit by name, else the first they fit loosely (``bound`` itself first, renamed);
    None when they validate against ``bound`` or fit nothing."""
    if not isinstance(args, dict) or not args:
        return None
    try:
        arg_models(bound).model_validate(args)
        return None
    except ValidationError:
        pass
    for loose, targets in ((False, reach), (True, [bound, *reach])):
        for spec in targets:
            mapped = fitted(args, spec, arg_models(spec), loose=loose)
            if mapped is not None:
                if spec is bound:
                    log.info("arguments %s renamed to %s's own: %s", args, bound.name, mapped)
                return Binding(spec, mapped)
    return None


def rebinding_switch(task: Task, bound: ToolSpec, binding: Binding) -> ToolSwitch:
    """Log and announce a call moved from ``bound`` to another tool its arguments fit; the switch."""
    reason = f"the arguments fit {binding.spec.name}'s schema, not {bound.name}'s"
    switch = ToolSwitch(
        from_tool=bound.name, to_tool=binding.spec.name, reason=reason, args=binding.args, mapped_by="name"
    )
    log.warning("task %s: %s; calling %s with %s", task.id, reason, binding.spec.name, binding.args)
    announce(ToolSwitchEvent(event="tool_switch", task_id=task.id, **switch))
    return switch
