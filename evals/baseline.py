"""The baselines aisearch is measured against, built from the project's own parts.

* **RAG** (vanilla, single-shot): one hybrid retrieval (BM25 + MiniLM, RRF) of the raw question
  over the same index, top 5 passages, and one call to the Writer's model asking for a short
  answer: the setup of ``../shared/notes/qa-baselines.md``.
* **Closed-book**: the same model and prompt with no context.

An open question (advice, a plan, an analysis: ``agents/answer_form.py``, the rule the Writer
uses) is answered in full by both, at most 512 tokens, as aisearch answers it; every other
question with a short phrase.

Each returns a system record in the runner's per-question schema (prediction, short answer,
evidence, seconds per step, tokens, error).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from agents.answer_form import is_open_question
from agents.short_answer import clean_short
from evals.trace import TokenCounter
from models.structured import decode_entities, message_text, strip_thinking
from prompts import render
from tools.index.search import Searcher

RAG_K = 5
ANSWER_TOKENS = 32
FULL_TOKENS = 512  # an open question's answer in full, as the Writer's


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
        self.full_model = model.bind(max_tokens=FULL_TOKENS, temperature=0)
        self.searcher = searcher
        self.k = k

    async def _read(self, user: str, full: bool) -> tuple[str, dict[str, Any], float]:
        counter = TokenCounter(role="writer")
        started = time.perf_counter()
        messages = [SystemMessage(content=render("baseline_system")), HumanMessage(content=user)]
        model = self.full_model if full else self.model
        reply = await model.ainvoke(messages, config={"callbacks": [counter]})
        # read as the Writer's reply is read: quotes the model wrote as &#34; decoded
        return decode_entities(message_text(reply)), counter.as_dict(), time.perf_counter() - started

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
        full = is_open_question(question)
        prompt = "baseline_rag_full" if full else "baseline_rag"
        text, tokens, read_s = await self._read(
            render(prompt, context=format_context(passages), question=question), full
        )
        seconds = {"retrieve": retrieved, "read": read_s}
        return _record(text, passages, seconds, tokens, "rag", started, full)

    async def closed_book(self, question: str) -> dict[str, Any]:
        """The model alone, no retrieval."""
        started = time.perf_counter()
        full = is_open_question(question)
        prompt = "baseline_closed_book_full" if full else "baseline_closed_book"
        text, tokens, read_s = await self._read(render(prompt, question=question), full)
        return _record(text, [], {"read": read_s}, tokens, "closed_book", started, full)


def _record(
    text: str,
    passages: list[dict[str, Any]],
    node_seconds: dict[str, float],
    tokens: dict[str, Any],
    route: str,
    started: float,
    full: bool = False,
) -> dict[str, Any]:
    answer = first_line(text)
    return {
        "prediction": strip_thinking(text).strip() if full else answer,
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
