"""The function calls in a model's reply, in BFCL's form ``[{name: {param: value}}, ...]``.

The reply's ``tool_calls`` come first. When there are none, the text is read, because small local
models often write the call instead of emitting it:

* Qwen's own ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks;
* llama.cpp's function-calling prompt form ``functions.<name>:`` followed by a JSON object;
* JSON (fenced or bare): ``{"name", "arguments"|"parameters"}``, ``{"function": ...}``,
  ``{<function name>: {...}}``, or a list of these;
* Python calls, as BFCL's prompting mode asks: ``[f(a=1), g(b="x")]`` or ``f(a=1)``, either the whole
  text or, inside prose, calls of the task's own functions.

Text that yields no call is no call (what the ``irrelevance`` category wants).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from evals.bfcl_schema import ToolSet

Call = dict[str, dict[str, Any]]
Source = Literal["tool_calls", "text", "none"]

TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.S)
LLAMA_FORM = re.compile(r"functions\.([\w.\-]+):\s*")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "params")
MAX_TEXT = 20_000


@dataclass
class ReadCalls:
    """The calls read from one reply, where they came from, and what could not be read."""

    calls: list[Call] = field(default_factory=list)
    source: Source = "none"
    problems: list[str] = field(default_factory=list)


def _arguments(value: Any) -> dict[str, Any] | None:
    """Arguments given as a dict or as a JSON object in a string."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def _json_calls(value: Any, tools: ToolSet) -> list[Call]:
    """Calls in a decoded JSON value (the shapes in the module docstring)."""
    if isinstance(value, list):
        return [call for item in value for call in _json_calls(item, tools)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list):
        return _json_calls(value["tool_calls"], tools)
    inner = value.get("function")
    if isinstance(inner, dict) and "name" in inner:
        return _json_calls(inner, tools)
    name = (
        value.get("name") if isinstance(value.get("name"), str) else inner if isinstance(inner, str) else None
    )
    if name and (tools.known(name) or any(k in value for k in ARGUMENT_KEYS)):
        given: Any = next((value[k] for k in ARGUMENT_KEYS if k in value), {})
        arguments = _arguments(given)
        return [{name: arguments}] if arguments is not None else []
    if len(value) == 1:
        (key, arguments), = value.items()  # fmt: skip
        if tools.known(str(key)) and isinstance(arguments, dict):
            return [{str(key): arguments}]
    return []


def _load_json(text: str) -> Any:
    """The first JSON value in ``text`` (whole, or from its first bracket), or None."""
    text = text.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    for start in sorted(starts):
        try:
            return json.JSONDecoder().raw_decode(text[start:])[0]
        except json.JSONDecodeError:
            continue
    return None


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a name or attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _value(node: ast.expr) -> Any:
    """A literal's value; anything else (a variable, an expression) as its source text, as BFCL does."""
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ast.unparse(node)


def _python_calls(text: str) -> list[Call] | None:
    """Calls in a Python expression: a call or a list/tuple of calls (None when it is not one)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    body = tree.body
    nodes = body.elts if isinstance(body, (ast.List, ast.Tuple)) else [body]
    if not nodes or not all(isinstance(n, ast.Call) for n in nodes):
        return None
    calls: list[Call] = []
    for node in nodes:
        assert isinstance(node, ast.Call)
        name = _dotted(node.func)
        if name is None:
            return None
        calls.append({name: {k.arg: _value(k.value) for k in node.keywords if k.arg}})
    return calls


def _calls_in_prose(text: str, tools: ToolSet) -> list[Call]:
    """Calls of the task's own functions written inside prose (``... use f(a=1) to ...``)."""
    names = sorted({n for n in tools.names if n}, key=len, reverse=True)
    if not names:
        return []
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in names) + r")\s*\(")
    calls: list[Call] = []
    for match in pattern.finditer(text):
        depth, end = 0, None
        for index in range(match.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[index], 0)
            if depth == 0:
                end = index + 1
                break
        found = _python_calls(text[match.start() : end]) if end else None
        if found:
            calls += found
    return calls


def _text_calls(text: str, tools: ToolSet) -> list[Call]:
    """Calls written in a reply's text (the forms in the module docstring), first form that yields any."""
    text = text[:MAX_TEXT]
    tagged = [c for block in TOOL_CALL_TAG.findall(text) for c in _json_calls(_load_json(block), tools)]
    if tagged:
        return tagged
    llama_form = LLAMA_FORM.split(text)
    if len(llama_form) > 2:  # [before, name1, body1, name2, body2, ...]
        pairs = zip(llama_form[1::2], llama_form[2::2], strict=False)
        found = [{name: args} for name, body in pairs if (args := _arguments_of_body(body)) is not None]
        if found:
            return found
    for candidate in [*FENCE.findall(text), text]:
        python = _python_calls(candidate)
        if python:
            return python
        found = _json_calls(_load_json(candidate), tools)
        if found:
            return found
    return _calls_in_prose(text, tools)


def _arguments_of_body(body: str) -> dict[str, Any] | None:
    loaded = _load_json(body)
    return loaded if isinstance(loaded, dict) else None


def _content_text(content: Any) -> str:
    """A message's content as text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content if p)
    return ""


def _named(calls: list[Call], tools: ToolSet) -> list[Call]:
    """Calls with BFCL's function names (the API's underscores mapped back to dots)."""
    return [{tools.bfcl_name(name): args for name, args in call.items()} for call in calls]


def read_calls(message: Any, tools: ToolSet) -> ReadCalls:
    """The calls of a LangChain ``AIMessage``: its ``tool_calls``, else the ones written in its text."""
    problems: list[str] = []
    calls: list[Call] = []
    for call in getattr(message, "tool_calls", None) or []:
        calls.append({str(call.get("name") or ""): dict(call.get("args") or {})})
    for bad in getattr(message, "invalid_tool_calls", None) or []:
        problems.append(
            f"tool call {bad.get('name')!r} with unreadable arguments: {str(bad.get('args'))[:200]}"
        )
        calls.append({str(bad.get("name") or ""): _arguments(bad.get("args")) or {}})
    if calls:
        return ReadCalls(_named(calls, tools), "tool_calls", problems)
    text = _content_text(getattr(message, "content", ""))
    written = _text_calls(text, tools) if text.strip() else []
    if written:
        return ReadCalls(_named(written, tools), "text", problems)
    return ReadCalls([], "none", problems)
