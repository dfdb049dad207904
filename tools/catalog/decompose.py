"""Query decomposition into atomic intents (TURA §4.1.1, Eq. 2): a cheap rule splitter, and an LLM
decomposer (the App. A.2 prompt) that falls back to the rules when the model fails or its reply is
not a JSON list of tasks. The original query is kept as one more intent unless asked otherwise.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from models.structured import extract_json
from prompts import render
from tools.question_forms import COMPUTED_INTENT, PATH, RELATIVE_TIME, WRITE

if TYPE_CHECKING:
    from models.factory import ChatFn

log = logging.getLogger(__name__)

Mode = Literal["rules", "llm", "none"]
MODES: tuple[Mode, ...] = ("rules", "llm", "none")
MAX_INTENTS = 12
_SPLIT = re.compile(r"(?<=[.!?])\s+|,\s+|;\s+|\s+and\s+|\bthen\b", re.IGNORECASE)
IMPLICIT_NEEDS = {
    "time": "get the current date and time",
    "write": "write the result to a file on the local filesystem",
    "read": "read a file from the local filesystem",
    "compute": "calculate an arithmetic expression",
}


def rule_intents(query: str, min_words: int = 2) -> list[str]:
    """Clauses of ``query`` split at sentence ends, commas, semicolons, "and" and "then".

    Parts shorter than ``min_words`` words are dropped; when nothing is left the query itself is
    the one intent.
    """
    parts = [part.strip(" .,:;") for part in _SPLIT.split(query) if part]
    kept = [part for part in parts if len(part.split()) >= min_words]
    return kept[:MAX_INTENTS] or [query.strip()]


def implicit_intents(query: str) -> list[str]:
    """Needs a query implies without stating them: the current date for relative time ("tomorrow",
    "last 24 hours"), file access for a path (writing it when the query says save, write, …), and
    a calculation for a computed difference ("by how many years", "how much older")."""
    needs = []
    if RELATIVE_TIME.search(query):
        needs.append(IMPLICIT_NEEDS["time"])
    if PATH.search(query):
        needs.append(IMPLICIT_NEEDS["write" if WRITE.search(query) else "read"])
    if COMPUTED_INTENT.search(query):
        needs.append(IMPLICIT_NEEDS["compute"])
    return needs


def llm_intents(query: str, chat: ChatFn) -> list[str]:
    """The model's atomic sub-tasks for ``query`` (``{"tasks": [...]}``), or the rules' on failure."""
    try:
        reply = chat([{"role": "user", "content": render("tools_decompose", query=query)}])
        value = extract_json(reply)
        tasks = value.get("tasks") if isinstance(value, dict) else value
        intents = (
            [t.strip() for t in tasks if isinstance(t, str) and t.strip()] if isinstance(tasks, list) else []
        )
        if intents:
            return intents[:MAX_INTENTS]
        log.warning("the decomposer's reply holds no tasks; using the rule splitter")
    except Exception as exc:  # noqa: BLE001 - any model or parse failure falls back to the rules
        log.warning("query decomposition by the model failed (%s); using the rule splitter", exc)
    return rule_intents(query)


def decompose(
    query: str,
    mode: Mode = "rules",
    *,
    chat: ChatFn | None = None,
    keep_query: bool = True,
    implicit: bool = True,
) -> list[str]:
    """The intents to retrieve for: the query (when ``keep_query``) and its atomic parts, de-duplicated.

    Args:
        query: The user's query.
        mode: ``rules`` (the splitter), ``llm`` (``chat`` decomposes, rules on failure) or ``none``.
        chat: The decomposer model (required for ``llm``; without it the rules are used).
        keep_query: Also retrieve for the whole query (it carries the context its parts lose).
        implicit: Add the intents of implied needs (:func:`implicit_intents`), whichever splitter ran.
    """
    if mode == "none":
        parts: Sequence[str] = []
    else:
        split = llm_intents(query, chat) if mode == "llm" and chat is not None else rule_intents(query)
        parts = [*split, *(implicit_intents(query) if implicit else [])]
    intents = [query.strip()] if keep_query or not parts else []
    return list(dict.fromkeys([*intents, *parts]))
