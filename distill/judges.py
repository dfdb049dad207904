"""The two judges of TURA's curation (Eq. 7): ``D_distill = J_efficient(J_correct(D_expert))``.

* :func:`judge_correct`: the reply is the executor's JSON (a thought and a ``tool_calls`` list),
  every called tool exists, its arguments validate against the tool's schema, and the calls are
  AST-equal to the reference (BFCL's own checker; for an irrelevance task: no call).
* :func:`judge_efficient`: no call repeated with the same arguments, and no more calls than the
  reference needs.

Each returns a :class:`Judgement` naming the first check that failed, so curation can count the
trajectories lost at every stage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from evals.bfcl_calls import Call, _load_json
from evals.bfcl_data import BfclTask
from evals.bfcl_schema import ToolSet, to_tool
from evals.bfcl_score import Scorer

CORRECTNESS_STAGES: tuple[str, ...] = ("parsed", "tools_exist", "schema_valid", "reference")
EFFICIENCY_STAGES: tuple[str, ...] = ("no_repeats", "no_extra_calls")


@dataclass
class Reply:
    """A trajectory step read from the teacher's text: its thought and its calls (BFCL form)."""

    thought: str | None
    calls: list[Call] = field(default_factory=list)


@dataclass
class Judgement:
    """Whether a trajectory passed; when not, the stage that failed and why."""

    passed: bool
    stage: str | None = None
    reason: str | None = None


def parse_reply(text: str, tools: ToolSet) -> Reply | None:
    """The executor JSON in ``text`` (``{"thought": ..., "tool_calls": [{"name", "arguments"}]}``),
    with BFCL's names; None when it is not that form."""
    value = _load_json(text or "")
    if not isinstance(value, dict) or not isinstance(value.get("tool_calls"), list):
        return None
    thought = value.get("thought")
    calls: list[Call] = []
    for item in value["tool_calls"]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return None
        arguments = item.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                return None
        if not isinstance(arguments, dict):
            return None
        calls.append({tools.bfcl_name(item["name"]): arguments})
    return Reply(thought if isinstance(thought, str) else None, calls)


def schema_problem(function: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not validate against a BFCL function's parameters, or None."""
    schema = to_tool(function)["function"]["parameters"]
    try:
        error = next(iter(Draft202012Validator(schema).iter_errors(arguments)), None)
    except SchemaError as exc:  # a schema jsonschema cannot read: nothing to hold the call to
        return f"unreadable schema: {exc.message}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "arguments"
    return f"{where}: {error.message}"[:300]


def judge_correct(task: BfclTask, text: str, scorer: Scorer) -> tuple[Judgement, Reply | None]:
    """The correctness judge on one teacher reply (the stages of :data:`CORRECTNESS_STAGES`)."""
    tools = ToolSet(task.functions)
    reply = parse_reply(text, tools)
    if reply is None:
        return Judgement(False, "parsed", "not the executor's JSON reply"), None
    by_name = {str(f["name"]): f for f in task.functions}
    for call in reply.calls:
        for name, arguments in call.items():
            if name not in by_name:
                return Judgement(False, "tools_exist", f"no tool {name!r}"), reply
            problem = schema_problem(by_name[name], arguments)
            if problem:
                return Judgement(False, "schema_valid", f"{name}: {problem}"), reply
    verdict = scorer.score(task, reply.calls)
    if not verdict.correct:
        return Judgement(False, "reference", verdict.error or verdict.error_type), reply
    return Judgement(True), reply


def _key(call: Call) -> str:
    return json.dumps(call, sort_keys=True, default=str)


def judge_efficient(calls: list[Call], reference: Sequence[Mapping[str, object]] | None) -> Judgement:
    """The efficiency judge: no repeated call, and no more calls than the reference has (its calls'
    names, or the calls themselves: only their number counts)."""
    keys = [_key(c) for c in calls]
    if len(set(keys)) < len(keys):
        return Judgement(False, "no_repeats", "the same call is made twice")
    if reference is not None and len(calls) > len(reference):
        return Judgement(False, "no_extra_calls", f"{len(calls)} calls where {len(reference)} do")
    return Judgement(True)
