"""LLM listwise reranking in a sliding window (RankGPT; seed 001 §4.2.1), behind a flag.

The window of ``window`` passages starts at the bottom of the candidate list and moves up by
``step`` until it reaches the top; in each window the model writes an order such as
``[2] > [1] > [3]``. The model is any callable ``messages -> text`` (:data:`ChatFn`), so tests pass
a scripted function and the app passes an OpenAI-compatible endpoint
(``models.factory.chat_from_environment``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the factory pulls in langchain-openai, which the docsearch server does not need
    from models.factory import ChatFn

log = logging.getLogger(__name__)

_NUMBER = re.compile(r"\d+")

SYSTEM = "You are RankGPT, an intelligent assistant that ranks passages by their relevance to a search query."


def ranking_prompt(query: str, passages: Sequence[str], max_chars: int = 500) -> list[dict[str, str]]:
    """The RankGPT prompt for one window: numbered passages, then the instruction and format."""
    numbered = "\n".join(f"[{i}] {' '.join(text.split())[:max_chars]}" for i, text in enumerate(passages, 1))
    user = (
        f"I will provide you with {len(passages)} passages, each indicated by a numerical identifier [].\n"
        f"Rank the passages based on their relevance to the search query: {query}\n\n{numbered}\n\n"
        f"Search query: {query}\n"
        f"Rank the {len(passages)} passages above by their relevance to the search query, most relevant "
        "first, using their identifiers in the format [] > [], e.g. [2] > [1] > [3]. "
        "Only respond with the ranking, do not explain."
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_permutation(text: str, size: int) -> list[int]:
    """Read ``[3] > [1] > [2]`` as 0-based indices; unknown or repeated numbers are dropped and
    the missing ones are appended in their original order."""
    text = re.sub(r"<think>.*?</think>", "", text or "", flags=re.DOTALL)
    order: list[int] = []
    for match in _NUMBER.findall(text):
        index = int(match) - 1
        if 0 <= index < size and index not in order:
            order.append(index)
    return order + [i for i in range(size) if i not in order]


@dataclass
class ListwiseReranker:
    """Sliding-window listwise reranking of the top ``depth`` candidates."""

    chat: ChatFn
    window: int = 10
    step: int = 5
    depth: int = 20
    max_chars: int = 500

    def rerank(self, query: str, ids: Sequence[str], texts: dict[str, str]) -> list[str]:
        """Reorder ``ids`` (best first); only the first ``depth`` are reranked, the rest keep their place.

        A failing model call leaves that window in its previous order (logged), never fails the search.
        """
        head, tail = list(ids[: self.depth]), list(ids[self.depth :])
        if len(head) < 2:
            return head + tail
        end = len(head)
        start = max(0, end - self.window)
        while True:
            window = head[start:end]
            try:
                reply = self.chat(
                    ranking_prompt(query, [texts.get(pid, "") for pid in window], self.max_chars)
                )
                head[start:end] = [window[i] for i in parse_permutation(reply, len(window))]
            except Exception as exc:  # noqa: BLE001 - any model failure keeps the window as it is
                log.warning("rerank window %d-%d failed (%s); keeping its order", start, end, exc)
            if start == 0:
                break
            end -= self.step
            start = max(0, end - self.window)
        return head + tail
