"""The distilled executor's prompts: the task's functions, then the calls asked for as one JSON object.

Two modes, as TURA trains and infers its executor (§4.3.2, "train with thought, infer without"):

* ``thought``: ``{"thought": "<one short sentence>", "tool_calls": [{"name": ..., "arguments": {...}}]}``
  (the teacher writes trajectories in this form and the student is trained on it);
* ``nothought``: ``{"tool_calls": [...]}``, the call only (the student is trained on this too).

An empty ``tool_calls`` list declines (BFCL's irrelevance). :func:`evals.bfcl_calls.read_calls`
reads both forms (a JSON object with a ``tool_calls`` list).

:func:`calls_schema` is the ``nothought`` reply as a JSON schema: sent as ``response_format``, a
llama.cpp server constrains decoding to it, as the graph's executor asks for its calls
(``models/structured.py``), so only the task's function names and their parameters' types can be
written.
"""

from __future__ import annotations

import json
from typing import Any

from evals.bfcl_schema import to_tool

EXECUTOR_MODES: tuple[str, ...] = ("thought", "nothought")
_PERSONA = (
    "You are an expert in composing functions. You are given a question and a set of possible "
    "functions. Based on the question, make one or more function calls to achieve the purpose. "
    "If none of the functions can be used, or the question lacks required parameters, call nothing."
)
_FORMATS = {
    "thought": (
        'Reply with one JSON object and nothing else: {"thought": "<one short sentence: which '
        'function(s) and why, or why none fits>", "tool_calls": [{"name": "<function name>", '
        '"arguments": {"<parameter>": <value>}}]}. Use an empty tool_calls list when no function fits.'
    ),
    "nothought": (
        'Reply with one JSON object and nothing else: {"tool_calls": [{"name": "<function name>", '
        '"arguments": {"<parameter>": <value>}}]}. Use an empty tool_calls list when no function fits.'
    ),
}


def executor_system_prompt(functions: list[dict[str, Any]], mode: str) -> str:
    """The system prompt of one step in ``mode`` (``thought`` or ``nothought``).

    Raises:
        ValueError: On an unknown mode.
    """
    if mode not in _FORMATS:
        raise ValueError(f"unknown executor mode {mode!r} (choose from {', '.join(EXECUTOR_MODES)})")
    listed = json.dumps(functions, indent=1)
    return f"{_PERSONA}\n\nThe functions, in JSON format:\n{listed}\n\n{_FORMATS[mode]}"


def target_text(calls: list[dict[str, dict[str, Any]]], thought: str | None) -> str:
    """The reply a trained executor gives: the thought (when given) and the calls, as one JSON line.

    ``calls`` are in BFCL form (``[{name: {param: value}}]``).
    """
    body: dict[str, Any] = {"thought": thought} if thought is not None else {}
    body["tool_calls"] = [{"name": n, "arguments": a} for call in calls for n, a in call.items()]
    return json.dumps(body, ensure_ascii=False)


def calls_schema(
    functions: list[dict[str, Any]], *, thought: bool = False, at_least_one: bool = False
) -> dict[str, Any]:
    """The JSON schema of a ``nothought`` reply over ``functions`` (BFCL docs): a ``tool_calls`` list
    (possibly empty, or with ``at_least_one`` not) whose items each name one of the functions with
    that function's arguments (as :func:`evals.bfcl_schema.to_tool` converts them); with
    ``thought``, a ``thought`` string first (the ``thought`` reply)."""
    items = [
        {
            "type": "object",
            "properties": {
                "name": {"const": str(function["name"])},
                "arguments": to_tool(function)["function"]["parameters"],
            },
            "required": ["name", "arguments"],
        }
        for function in functions
    ]
    calls: dict[str, Any] = {"type": "array", "items": {"anyOf": items} if items else {}}
    if not items:
        calls["maxItems"] = 0
    elif at_least_one:
        calls["minItems"] = 1
    properties: dict[str, Any] = {"thought": {"type": "string"}} if thought else {}
    properties["tool_calls"] = calls
    return {"type": "object", "properties": properties, "required": list(properties)}


def calls_response_format(
    functions: list[dict[str, Any]], *, thought: bool = False, at_least_one: bool = False
) -> dict[str, Any]:
    """The ``response_format`` that makes a llama.cpp server constrain a reply to :func:`calls_schema`."""
    return {
        "type": "json_object",
        "schema": calls_schema(functions, thought=thought, at_least_one=at_least_one),
    }
