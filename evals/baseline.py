"""The baselines aisearch is measured against, built from the project's own parts.

* **RAG** (vanilla, single-shot): one hybrid retrieval (BM25 + MiniLM, RRF) of the raw question
  over the same index, top 5 passages, and one call to the Writer's model asking for a short
  answer: the setup of ``../shared/notes/qa-baselines.md``.
* **Closed-book**: the same model and prompt with no context.

Each returns a system record in the runner's per-question schema (prediction, short answer,
evidence, seconds per step, tokens, error).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agents.short_answer import clean_short
from evals.trace import TokenCounter
from models.structured import message_text, strip_thinking
from prompts import render
from tools.index.search import Searcher

RAG_K = 5
ANSWER_TOKENS = 32


def first_line(text: str) -> str:
    """The first non-empty line of a reply, without a leading ``Answer:``."""
    for line in strip_thinking(text).splitlines():
        line = line.strip()
        if line:
            return line.removeprefix("Answer:").strip()
    return ""


def format_context(passages: list[dict[str, Any]]) -> str:
    """Passages in rank order as ``[i] title: text``, separated by blank lines."""
    return "\n\n".join(f"[{i}] {p['title']}: {p['content']}" for i, p in enumerate(passages, start=1))


class Baselines:
    """Vanilla RAG and closed-book answers with one model and one searcher."""

    def __init__(self, model: BaseChatModel, searcher: Searcher | None, k: int = RAG_K) -> None:
        """Answer with ``model``; retrieve the top ``k`` from ``searcher`` (closed-book needs none)."""
        self.model = model.bind(max_tokens=ANSWER_TOKENS, temperature=0)
        self.searcher = searcher
        self.k = k

    async def _read(self, user: str) -> tuple[str, dict[str, Any], float]:
        counter = TokenCounter(role="writer")
        started = time.perf_counter()
        messages = [SystemMessage(content=render("baseline_system")), HumanMessage(content=user)]
        reply = await self.model.ainvoke(messages, config={"callbacks": [counter]})
        return message_text(reply), counter.as_dict(), time.perf_counter() - started

    def retrieve(self, question: str) -> list[dict[str, Any]]:
        """The top ``k`` passages for the raw question, as evidence items."""
        if self.searcher is None:
            raise ValueError("RAG needs a searcher")
        hits = self.searcher.rank(question, self.k, "hybrid")
        stored = self.searcher.fetch([hit.id for hit in hits])
        return [
            {
                "id": hit.id,
                "title": stored[hit.id].get("title", ""),
                "content": stored[hit.id].get("text", ""),
                "kind": "document",
            }
            for hit in hits
            if hit.id in stored
        ]

    async def rag(self, question: str) -> dict[str, Any]:
        """One retrieval and one read: the vanilla RAG baseline."""
        started = time.perf_counter()
        passages = await asyncio.to_thread(self.retrieve, question)
        retrieved = time.perf_counter() - started
        user = render("baseline_rag", context=format_context(passages), question=question)
        text, tokens, read_s = await self._read(user)
        return _record(text, passages, {"retrieve": retrieved, "read": read_s}, tokens, "rag", started)

    async def closed_book(self, question: str) -> dict[str, Any]:
        """The model alone, no retrieval."""
        started = time.perf_counter()
        text, tokens, read_s = await self._read(render("baseline_closed_book", question=question))
        return _record(text, [], {"read": read_s}, tokens, "closed_book", started)


def _record(
    text: str,
    passages: list[dict[str, Any]],
    node_seconds: dict[str, float],
    tokens: dict[str, Any],
    route: str,
    started: float,
) -> dict[str, Any]:
    answer = first_line(text)
    return {
        "prediction": answer,
        "short": clean_short(answer),
        "citations": [],
        "evidence": passages,
        "sentences": [],
        "route": route,
        "node_seconds": {name: round(seconds, 3) for name, seconds in node_seconds.items()},
        "tokens": tokens,
        "latency_s": round(time.perf_counter() - started, 3),
        "error": None,
    }
