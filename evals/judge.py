"""LLM judges: correctness and faithfulness on a 3-point scale (TURA §5.1.3), and a blind
side-by-side comparison giving Win/Tie/Lose for NWR (seed 001 Eq. 46).

The judge is any OpenAI-compatible chat model (default: the Writer's, i.e. the local 1.5B). A
small judge is not an oracle: the runner reports its agreement with exact match so its verdicts
can be trusted or discounted. Side-by-side is blind: the two answers are shown as A and B in an
order fixed by a hash of the question id, so neither system is always first. A verdict the judge
cannot give (unparseable twice) is recorded as ``None``, never guessed.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from models.structured import structured_call
from prompts import render

log = logging.getLogger(__name__)

MAX_SOURCE_CHARS = 400
MAX_SOURCES = 5
MAX_ANSWER_CHARS = 600
SCALE = {
    "correct": 2,
    "partially correct": 1,
    "incorrect": 0,
    "faithful": 2,
    "partially faithful": 1,
    "unfaithful": 0,
}


class CorrectnessVerdict(BaseModel):
    """The judge's correctness verdict."""

    verdict: Literal["correct", "partially correct", "incorrect"]


class FaithfulnessVerdict(BaseModel):
    """The judge's faithfulness verdict."""

    verdict: Literal["faithful", "partially faithful", "unfaithful"]


class PairwiseVerdict(BaseModel):
    """Which of two answers is better."""

    better: Literal["A", "B", "tie"]


def shown_answer(system: dict[str, Any], limit: int = MAX_ANSWER_CHARS) -> str:
    """What the judge sees of a system's answer: the short answer and the explanation, at most
    ``limit`` characters."""
    short, text = system.get("short") or "", system.get("prediction") or ""
    shown = text if not short or text.startswith(short) else f"{short}. {text}"
    return " ".join(shown.split())[:limit] or "(no answer)"


def a_first(question_id: str) -> bool:
    """Whether the first system is shown as A (a stable coin flip per question)."""
    return hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0


class Judge:
    """Grades answers with one chat model."""

    def __init__(self, model: BaseChatModel, constrain: bool = True) -> None:
        """Judge with ``model`` (deterministic decoding); ``constrain`` asks for schema-constrained JSON."""
        self.model = model.bind(temperature=0, max_tokens=24)
        self.constrain = constrain

    async def _ask(self, prompt: str, schema: type[BaseModel]) -> BaseModel | None:
        try:
            result = await structured_call(
                self.model,
                [HumanMessage(content=prompt)],
                schema,
                fallback=lambda errors: None,
                constrain=self.constrain,
            )
        except Exception as exc:  # noqa: BLE001 - a judge failure is a missing verdict, not a failed run
            log.warning("judge call failed: %s: %s", type(exc).__name__, exc)
            return None
        return result.value

    async def correctness(self, question: str, gold: str, system: dict[str, Any]) -> int | None:
        """2 correct, 1 partially correct, 0 incorrect (None when the judge gave no verdict)."""
        prompt = render("judge_correctness", question=question, gold=gold, answer=shown_answer(system))
        verdict = await self._ask(prompt, CorrectnessVerdict)
        return SCALE[verdict.verdict] if isinstance(verdict, CorrectnessVerdict) else None

    async def faithfulness(self, question: str, system: dict[str, Any]) -> int | None:
        """2 faithful, 1 partially, 0 unfaithful to the system's own evidence (cited first)."""
        evidence = {item["id"]: item for item in system.get("evidence", [])}
        cited = [
            evidence[c["evidence_id"]] for c in system.get("citations", []) if c["evidence_id"] in evidence
        ]
        shown = (cited + [item for item in evidence.values() if item not in cited])[:MAX_SOURCES]
        sources = "\n".join(
            f"[{n}] {item['title']}: {' '.join(item['content'].split())[:MAX_SOURCE_CHARS]}"
            for n, item in enumerate(shown, start=1)
        )
        prompt = render(
            "judge_faithfulness", sources=sources or "(none)", question=question, answer=shown_answer(system)
        )
        verdict = await self._ask(prompt, FaithfulnessVerdict)
        return SCALE[verdict.verdict] if isinstance(verdict, FaithfulnessVerdict) else None

    async def pairwise(
        self, question_id: str, question: str, gold: str, first: dict[str, Any], second: dict[str, Any]
    ) -> Literal["win", "tie", "lose"] | None:
        """Blind side by side: ``win`` when ``first`` is better, ``lose`` when ``second`` is."""
        swap = not a_first(question_id)
        a, b = (second, first) if swap else (first, second)
        prompt = render(
            "judge_pairwise", question=question, gold=gold, answer_a=shown_answer(a), answer_b=shown_answer(b)
        )
        verdict = await self._ask(prompt, PairwiseVerdict)
        if not isinstance(verdict, PairwiseVerdict):
            return None
        if verdict.better == "tie":
            return "tie"
        first_won = (verdict.better == "A") != swap
        return "win" if first_won else "lose"
