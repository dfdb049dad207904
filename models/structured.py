"""Structured output that small models can meet: parse, then repair, then a safe fallback.

Every structured call (master assessment, plan, executor tool arguments, sufficiency judgement)
goes through :func:`structured_call`:

1. ask the model, constraining decoding to the JSON schema where the endpoint supports it
   (llama.cpp grammars via ``response_format``);
2. strip ``<think>`` blocks and code fences, and parse the last JSON object in the text;
3. validate it (a Pydantic schema plus an optional domain check such as the plan validator);
4. on failure, one repair round that shows the model its output and the validator's errors;
5. on failure again, a rule-based fallback value, recorded as such.

An endpoint that fails (drops the connection, times out, rejects the prompt) gets no repair round:
the fallback value is used at once, or :class:`ModelCallError` (a :class:`StructuredOutputError`)
says what happened, so every caller that degrades on bad output degrades on a dead endpoint too.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, TypeVar, overload

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ValidationError

from models.errors import MODEL_ERRORS, describe_model_error

log = logging.getLogger(__name__)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
THINK_PATTERN = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
FENCE_PATTERN = re.compile(r"```(?:json)?", re.IGNORECASE)
ENTITY_PATTERN = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|quot|amp|lt|gt|apos);")
PARTIAL_ENTITY = re.compile(r"&(?:#[xX]?[0-9a-fA-F]{0,7}|[a-z]{0,4})$")


class StructuredOutputError(ValueError):
    """The model's output could not be turned into the expected structure."""


class ModelCallError(StructuredOutputError):
    """The model endpoint gave no output at all (dropped, timed out or rejected the request)."""


@dataclass
class StructuredResult(Generic[T]):
    """The value and how it was obtained (for traces and the trajectory checks)."""

    value: T
    raw: str
    attempts: int
    errors: list[str] = field(default_factory=list)
    fallback: bool = False


def strip_thinking(text: str) -> str:
    """Remove ``<think>…</think>`` blocks (and an unterminated trailing one)."""
    return THINK_PATTERN.sub("", text).strip()


def decode_entities(text: str) -> str:
    """``text`` with its numeric and XML character references decoded (``&#34;`` → ``"``).

    The local Qwen2.5-Coder models sometimes write quotes as ``&#34;`` in prose and JSON alike.
    Only complete references are decoded: "AT&T" or a bare "&copy" stay as written.
    """
    return ENTITY_PATTERN.sub(lambda match: html.unescape(match.group(0)), text)


def message_text(message: BaseMessage) -> str:
    """The plain text of a chat message, whatever its content shape."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = [part if isinstance(part, str) else part.get("text", "") for part in content]
    return "".join(parts)


def extract_json(text: str) -> Any:
    """Return the last top-level JSON object (or array) in ``text``.

    Models often write reasoning first and JSON last, or wrap JSON in a code fence. The local
    Qwen2.5-Coder models sometimes write their quotes HTML-escaped (``{&#34;tasks&#34;: …}``): text
    with no JSON in it is read once more with its character references decoded (:func:`decode_entities`).

    Raises:
        StructuredOutputError: When no JSON value can be decoded.
    """
    cleaned = FENCE_PATTERN.sub("", strip_thinking(text))
    objects = _json_values(cleaned)
    if not objects and "&" in cleaned:
        objects = _json_values(decode_entities(cleaned))
    if not objects:
        snippet = cleaned[:200].replace("\n", " ")
        raise StructuredOutputError(f"no JSON object found in the model output: {snippet!r}")
    return objects[-1]


def _json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array in ``text``, in order."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    index = 0
    while index < len(text):
        starts = [pos for pos in (text.find("{", index), text.find("[", index)) if pos >= 0]
        if not starts:
            break
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        if isinstance(value, dict | list):
            found.append(value)
        index = end
    return found


def require_all(node: Any) -> Any:
    """A copy of a JSON schema in which every object property is required.

    A grammar built from a schema lets the model skip optional fields, and small models do: they
    jump straight to the verdict and leave out the reasoning fields meant to come first. Requiring
    every field makes the model write them all, in the schema's order.
    """
    if isinstance(node, dict):
        copy = {key: require_all(value) for key, value in node.items()}
        if isinstance(copy.get("properties"), dict):
            copy["required"] = list(copy["properties"])
        return copy
    if isinstance(node, list):
        return [require_all(item) for item in node]
    return node


def schema_response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` that makes llama.cpp constrain decoding to ``schema`` (all fields written)."""
    return {"type": "json_object", "schema": require_all(schema.model_json_schema())}


@overload
async def structured_call(
    model: Runnable[LanguageModelInput, BaseMessage],
    messages: Sequence[BaseMessage],
    schema: type[M],
    *,
    check: None = None,
    fallback: Callable[[list[str]], T] | None = None,
    salvage: Callable[[Any], T | None] | None = None,
    constrain: bool = True,
    repair: bool = True,
    on_text: Callable[[int, str], None] | None = None,
) -> StructuredResult[M | T]: ...


@overload
async def structured_call(
    model: Runnable[LanguageModelInput, BaseMessage],
    messages: Sequence[BaseMessage],
    schema: type[M],
    *,
    check: Callable[[M], T],
    fallback: Callable[[list[str]], T] | None = None,
    salvage: Callable[[Any], T | None] | None = None,
    constrain: bool = True,
    repair: bool = True,
    on_text: Callable[[int, str], None] | None = None,
) -> StructuredResult[T]: ...


async def structured_call(
    model: Runnable[LanguageModelInput, BaseMessage],
    messages: Sequence[BaseMessage],
    schema: type[M],
    *,
    check: Callable[[M], Any] | None = None,
    fallback: Callable[[list[str]], Any] | None = None,
    salvage: Callable[[Any], Any] | None = None,
    constrain: bool = True,
    repair: bool = True,
    on_text: Callable[[int, str], None] | None = None,
) -> StructuredResult[Any]:
    """Ask ``model`` for a ``schema`` object; parse → repair → fallback.

    Args:
        model: The role's chat model.
        messages: The prompt.
        schema: The Pydantic model the reply must match.
        check: A further domain check/conversion of the parsed value (raise ``ValueError`` with a
            message the model can act on); its return value is the result.
        fallback: Builds a safe value from the list of errors when parse and repair both fail;
            without it the errors are raised.
        salvage: Given the JSON of a reply that ``schema`` or ``check`` rejected, a value to take
            instead (no repair round), or None to go on (the Executor's arguments that fit
            another tool: ``agents/executor_rebind.py``).
        constrain: Ask the endpoint for schema-constrained decoding.
        repair: Allow one repair round.
        on_text: With it, each reply is streamed and ``on_text(attempt, text_so_far)`` is called
            after every chunk (the Planner starts tasks of a plan still being written).

    Raises:
        StructuredOutputError: When both attempts fail and there is no fallback.
        ModelCallError: When the endpoint fails and there is no fallback.
    """
    # extra_body goes to the endpoint untouched (langchain-openai rewrites a top-level response_format)
    runnable = (
        model.bind(extra_body={"response_format": schema_response_format(schema)}) if constrain else model
    )
    history = list(messages)
    errors: list[str] = []
    raw = ""
    rounds = 2 if repair else 1
    for attempt in range(1, rounds + 1):
        try:
            if on_text is None:
                raw = message_text(await runnable.ainvoke(history))
            else:
                raw = await _streamed_text(runnable, history, partial(on_text, attempt))
        except MODEL_ERRORS as exc:
            problem = describe_model_error(exc)
            log.warning("structured call for %s: %s", schema.__name__, problem)
            errors.append(problem)
            if fallback is None:
                raise ModelCallError(f"{schema.__name__}: {problem}") from exc
            return StructuredResult(
                value=fallback(errors), raw=raw, attempts=attempt, errors=errors, fallback=True
            )
        found: Any = None
        try:
            found = extract_json(raw)
            parsed = schema.model_validate(found)
            value = check(parsed) if check else parsed
            return StructuredResult(value=value, raw=raw, attempts=attempt, errors=errors)
        except (StructuredOutputError, ValidationError, ValueError) as exc:
            problem = _describe(exc)
            errors.append(problem)
            log.info("structured output for %s rejected (attempt %d): %s", schema.__name__, attempt, problem)
            salvaged = salvage(found) if salvage is not None and found is not None else None
            if salvaged is not None:
                return StructuredResult(value=salvaged, raw=raw, attempts=attempt, errors=errors)
            history = [
                *history,
                AIMessage(content=raw),
                HumanMessage(
                    content=(
                        f"That reply was not valid: {problem}\n"
                        "Reply again with only the corrected JSON object, nothing else."
                    )
                ),
            ]
    if fallback is None:
        raise StructuredOutputError(f"{schema.__name__}: {'; '.join(errors)}")
    return StructuredResult(value=fallback(errors), raw=raw, attempts=rounds, errors=errors, fallback=True)


async def _streamed_text(
    runnable: Runnable[Any, BaseMessage], messages: list[BaseMessage], on_text: Callable[[str], None]
) -> str:
    """The reply's text, streamed: ``on_text`` sees the text so far after every chunk."""
    text = ""
    async for chunk in runnable.astream(messages):
        piece = message_text(chunk)
        if piece:
            text += piece
            on_text(text)
    return text


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'object'}: {err['msg']}" for err in exc.errors()
        )
    return str(exc)
