"""What can go wrong when a model endpoint is called, or the embedded server started, said so a
person can act on it.

The OpenAI client raises ``openai.APIError`` subclasses (a dropped connection, a timeout, a 4xx or
5xx answer); a raw HTTP client raises ``httpx.HTTPError``; an ``asyncio`` deadline raises
``TimeoutError``. Callers catch :data:`MODEL_ERRORS` and degrade: use a rule fallback, shrink the
prompt when it did not fit the context, or answer with what exists and say what failed.
"""

from __future__ import annotations

import httpx
import openai


class LocalServerError(RuntimeError):
    """The embedded model server cannot be started or reached (the message says why and what to do)."""


MODEL_ERRORS: tuple[type[Exception], ...] = (openai.APIError, httpx.HTTPError, TimeoutError)

_OVERFLOW_HINTS = ("context", "too long", "too many tokens", "exceed", "maximum")


def is_context_overflow(exc: BaseException) -> bool:
    """Whether the endpoint rejected the request because the prompt does not fit its context."""
    if not isinstance(exc, openai.BadRequestError):
        return False
    text = str(exc).lower()
    return any(hint in text for hint in _OVERFLOW_HINTS)


def describe_model_error(exc: BaseException) -> str:
    """One line saying what happened to a model call (no traceback, no request body)."""
    if is_context_overflow(exc):
        return "the model endpoint rejected the prompt as longer than its context"
    if isinstance(exc, openai.APITimeoutError | TimeoutError | httpx.TimeoutException):
        return "the model endpoint timed out"
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return "the model endpoint dropped the connection or is not running"
    if isinstance(exc, openai.APIStatusError):
        return f"the model endpoint answered HTTP {exc.status_code}: {_first_line(exc.message)}"
    return f"the model call failed: {_first_line(str(exc)) or type(exc).__name__}"


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0][:200] if (text or "").strip() else ""
