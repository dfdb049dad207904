"""The semantic answer cache in a turn: an earlier answer served before the team runs, and the
team's answer kept for later turns (seed 001 §6.3.2, MeanCache; the store is ``tools/cache/answers.py``).

The Master looks first (:func:`recall`): the question and the earlier user turns of its thread are
matched against earlier answers over the same documents; a hit ends the turn with that answer,
marked ``answer["cached"]`` and announced by a ``cache`` event, and no model is called. The Writer
keeps its answer (:func:`remember`) when it can be served again as it is:

- the question does not ask about the present or relative time (``tools/question_forms.py``'s
  ``LIVE``, ``RECENT``, ``RELATIVE_TIME`` and ``CLOCK_QUESTION``: "today", "latest", "what time");
- nothing is missing from it (no failed tool, no spent budget, no failed model call);
- every tool it used is cacheable (read-only and closed-world, ``tools/cache/tool_calls.py``): an
  answer built on the clock, the web or an unannotated third-party tool is never kept;
- no clarifying question changed what was asked.

A run that bypasses the cache (``Settings.bypass_cache``) does not look, but its answer is kept.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from core.events import AnswerEvent, CacheEvent, emit
from core.run import Run
from core.state import Answer, CachedRecord, SearchState, resolved_query, turn_start
from tools.question_forms import CLOCK_QUESTION, LIVE, RECENT, RELATIVE_TIME

log = logging.getLogger(__name__)

# an embedder or SQLite failure costs the cache, never the turn
CACHE_ERRORS = (sqlite3.Error, OSError, RuntimeError, ValueError)


def time_dependent(question: str) -> bool:
    """Whether ``question`` asks about the present or a time relative to now: its answer changes."""
    return any(pattern.search(question) for pattern in (LIVE, RECENT, RELATIVE_TIME, CLOCK_QUESTION))


def user_turns(messages: list[AnyMessage], turns: int) -> list[str]:
    """The last ``turns`` user turns of ``messages`` (oldest first)."""
    said = [str(message.content) for message in messages if isinstance(message, HumanMessage)]
    return said[-turns:] if turns else []


async def recall(run: Run, state: SearchState, query: str, today: str) -> dict[str, Any] | None:
    """The state update that answers ``query`` from the cache, or None (no cache, bypassed, a
    question about the present, no earlier answer that may be served)."""
    cache = run.answers
    if cache is None or run.settings.bypass_cache or time_dependent(query):
        return None
    context = user_turns(state.get("messages", []), run.settings.cache.context_turns)
    try:
        found = await asyncio.to_thread(cache.lookup, query, context, await asyncio.to_thread(run.corpus))
    except CACHE_ERRORS as exc:
        log.warning("the answer cache could not be read (%s); the team answers", exc)
        return None
    for cached, similarity, why in found.refused:
        log.info("not served from the cache: %r (similarity %.3f): %s", cached, similarity, why)
    hit = found.hit
    if hit is None:
        return None
    record = CachedRecord(
        query=hit.query, similarity=hit.similarity, age_s=hit.age_s, saved_s=round(hit.seconds, 2)
    )
    log.info(
        "answered from the cache: %r (similarity %.3f, %.0f s old)", hit.query, hit.similarity, hit.age_s
    )
    stored: Answer = hit.payload["answer"]
    answer: Answer = {**stored, "cached": record}
    emit(CacheEvent(event="cache", **record))
    emit(AnswerEvent(event="answer", answer=answer))
    return {
        "query": query,
        "messages": [HumanMessage(content=query), AIMessage(content=answer["text"])],
        "today": today,
        "assessment": hit.payload["assessment"],
        "clarification": None,
        "route": hit.payload["route"],
        **turn_start(evidence=hit.payload["evidence"]),
        "answer": answer,
    }


def unkept_because(run: Run, state: SearchState, answer: Answer) -> str | None:
    """Why ``answer`` may not be served again (see the module docstring), or None."""
    question = resolved_query(state)
    if time_dependent(state.get("query", "")) or time_dependent(question):
        return "it asks about the present"
    if answer["missing"]:
        return "something is missing from it"
    clarification = state.get("clarification")
    if clarification is not None and clarification["status"] == "used":
        return "a clarification changed the question"
    if (assessment := state.get("assessment")) and assessment.get("web"):
        return "it was searched on the web"
    results = [*state.get("results", {}).values(), *state.get("discarded", [])]
    for call in (call for result in results for call in result["tool_calls"]):
        spec = run.tools.specs.get(call["tool"])
        if spec is None or not spec.cacheable:
            return f"it used {call['tool']}, whose results change"
    return None


async def remember(run: Run, state: SearchState, answer: Answer) -> None:
    """Keep the turn's answer for later turns when it may be served again as it is."""
    cache = run.answers
    if cache is None or not state.get("query"):
        return
    why = unkept_because(run, state, answer)
    if why:
        log.info("the answer is not cached: %s", why)
        return
    said = user_turns(state.get("messages", []), run.settings.cache.context_turns + 1)
    context = said[:-1]  # the last user turn is this question
    cited = {source["id"] for source in answer["sources"]}
    evidence = {key: item for key, item in state.get("evidence", {}).items() if key in cited}
    payload = {
        "route": state.get("route", "writer_only"),
        "assessment": state.get("assessment"),
        "answer": answer,
        "evidence": evidence,
    }
    seconds = time.time() - state.get("started_at", time.time())
    try:
        corpus = await asyncio.to_thread(run.corpus)
        await asyncio.to_thread(cache.store, state["query"], context, corpus, payload, seconds)
    except CACHE_ERRORS as exc:
        log.warning("could not keep the answer in the cache (%s)", exc)
