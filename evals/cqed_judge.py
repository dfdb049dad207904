"""SRSA's CQED judge: one call rates three answers 0-5 on informativeness, completeness, novelty
and actionability (SRSA's own prompts, verbatim: ``prompts/cqed_judge_system.md``,
``cqed_judge_user.md``, ``cqed_judge_example.md``, from ``../shared/notes/seed-002-003-prompts.md``).

SRSA's system prompt embeds a long worked example (about 1,800 tokens). It is included only when
the whole prompt and the judge's reply fit the judge's context (``context_tokens``, counted
approximately at 3.5 characters per token, a little more tokens than English text really takes);
without it the sentence that introduces it is left out too, and the record says which way the
prompt went. Answers are cut to fit what is left. A reply whose scores cannot all be read gets one
repair turn (``prompts/cqed_judge_repair.md``, our words: "output only the CSV"); what is still
missing after it is recorded as a parse failure, never guessed, and a failed call is recorded the
same way, never raised.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from evals.cqed_parse import CRITERIA, ParsedRating, parse_rating
from models.structured import message_text, strip_thinking
from prompts import render

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3.5
OUTPUT_TOKENS = 1024
REPAIR_OUTPUT_TOKENS = 512
MAX_ANSWER_CHARS = 2000
MIN_ANSWER_CHARS = 200
MAX_REPLY_CHARS = 12000


def approx_tokens(text: str) -> int:
    """Tokens of ``text``, approximately (3.5 characters per token, rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def system_prompt(with_example: bool) -> str:
    """SRSA's judge system prompt, with its worked example #1 or without it (and its introduction)."""
    example = ""
    if with_example:
        example = "The following is an example.\n" + render("cqed_judge_example").rstrip("\n") + "\n\n"
    return render("cqed_judge_system", example=example)


def user_prompt(query: str, answers: list[str]) -> str:
    """SRSA's judge user prompt with the query and the three answers, in the order shown."""
    if len(answers) != 3:
        raise ValueError(f"the CQED judge rates exactly 3 answers, got {len(answers)}")
    return render(
        "cqed_judge_user",
        query=query,
        model1_answer=answers[0],
        model2_answer=answers[1],
        model3_answer=answers[2],
    )


@dataclass
class JudgePrompt:
    """The judge's two messages, whether the worked example is in them, their approximate size."""

    system: str
    user: str
    with_example: bool
    prompt_tokens: int
    answers_cut: bool


def build_prompt(query: str, answers: list[str], context_tokens: int, output_tokens: int) -> JudgePrompt:
    """The judge prompt that fits ``context_tokens`` with ``output_tokens`` left for the reply.

    Answers are first cut to :data:`MAX_ANSWER_CHARS`; the worked example goes in when everything
    fits with it; without it, answers that still do not fit are cut further (to no less than
    :data:`MIN_ANSWER_CHARS` each, the endpoint's own limit being the last word).
    """
    cut = [a[:MAX_ANSWER_CHARS] for a in answers]
    user = user_prompt(query, cut)
    for with_example in (True, False):
        system = system_prompt(with_example)
        tokens = approx_tokens(system) + approx_tokens(user)
        if tokens + output_tokens <= context_tokens:
            return JudgePrompt(system, user, with_example, tokens, cut != answers)
    system = system_prompt(False)
    room = (
        context_tokens
        - output_tokens
        - approx_tokens(system)
        - approx_tokens(user_prompt(query, ["", "", ""]))
    )
    each = max(MIN_ANSWER_CHARS, int(room * CHARS_PER_TOKEN / 3) - 1)
    user = user_prompt(query, [a[:each] for a in cut])
    return JudgePrompt(system, user, False, approx_tokens(system) + approx_tokens(user), True)


@dataclass
class Rating:
    """One judge verdict on three answers, by position (1..3 = Model 1..3)."""

    scores: dict[int, dict[str, float]] = field(default_factory=dict)
    sources: dict[int, str] = field(default_factory=dict)
    complete: bool = False
    missing: list[str] = field(default_factory=list)
    with_example: bool = False
    prompt_tokens: int = 0
    answers_cut: bool = False
    repaired: bool = False
    error: str | None = None
    reply: str = ""
    repair_reply: str | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The rating as JSON-ready data (positions as string keys)."""
        data = asdict(self)
        data["scores"] = {str(k): v for k, v in self.scores.items()}
        data["sources"] = {str(k): v for k, v in self.sources.items()}
        return data


class CqedJudge:
    """Rates three answers to one query with SRSA's judge prompts on one chat model."""

    def __init__(
        self,
        model: BaseChatModel,
        context_tokens: int = 4096,
        output_tokens: int = OUTPUT_TOKENS,
        timeout_s: float | None = None,
    ) -> None:
        """Judge with ``model`` (deterministic decoding) whose context holds ``context_tokens``.

        Args:
            model: the judge's chat model.
            context_tokens: the judge's context window, in tokens.
            output_tokens: the reply's limit (the ratings and the CSV).
            timeout_s: a per-request timeout for an OpenAI-compatible model (a 1,024-token reply
                from a small local model on a CPU takes minutes); ``None`` keeps the model's own.
        """
        self.model = model
        self.context_tokens = context_tokens
        self.output_tokens = output_tokens
        self.timeout_s = timeout_s

    async def _call(self, messages: list[BaseMessage], max_tokens: int) -> str:
        options: dict[str, Any] = {"temperature": 0, "max_tokens": max_tokens}
        if self.timeout_s is not None:
            options["timeout"] = self.timeout_s
        reply = await self.model.bind(**options).ainvoke(messages)
        return strip_thinking(message_text(reply))[:MAX_REPLY_CHARS]

    def _repair_messages(self, prompt: JudgePrompt, reply: str, missing: list[str]) -> list[BaseMessage]:
        """The first exchange and the repair request, the example dropped and the reply's start cut
        when they would not fit with the repair's own reply."""
        request = render("cqed_judge_repair", missing=", ".join(missing[:6]))
        system = prompt.system
        fixed = approx_tokens(prompt.user) + approx_tokens(request) + REPAIR_OUTPUT_TOKENS
        if approx_tokens(system) + fixed + approx_tokens(reply) > self.context_tokens:
            system = system_prompt(False)
        room = self.context_tokens - approx_tokens(system) - fixed
        kept = reply[-int(room * CHARS_PER_TOKEN) :] if room > 0 else ""
        return [
            SystemMessage(content=system),
            HumanMessage(content=prompt.user),
            AIMessage(content=kept),
            HumanMessage(content=request),
        ]

    async def rate(self, query: str, answers: list[str]) -> Rating:
        """Scores of the three answers (shown as Model 1, 2, 3 in this order), one repair at most.

        Args:
            query: the user's query.
            answers: the three answers, in the (blind) order they are shown.

        Returns:
            The rating; ``complete`` is False (with ``missing`` or ``error``) when not every score
            could be read.
        """
        started = time.perf_counter()
        prompt = build_prompt(query, answers, self.context_tokens, self.output_tokens)
        rating = Rating(
            with_example=prompt.with_example,
            prompt_tokens=prompt.prompt_tokens,
            answers_cut=prompt.answers_cut,
        )
        messages: list[BaseMessage] = [
            SystemMessage(content=prompt.system),
            HumanMessage(content=prompt.user),
        ]
        try:
            rating.reply = await self._call(messages, self.output_tokens)
        except Exception as exc:  # noqa: BLE001 - a failed judge call is a parse failure, not a failed run
            log.warning("CQED judge call failed: %s: %s", type(exc).__name__, exc)
            rating.error = f"{type(exc).__name__}: {exc}"[:300]
            rating.missing = [f"Model {p}" for p in (1, 2, 3)]
            rating.seconds = round(time.perf_counter() - started, 3)
            return rating
        parsed = parse_rating(rating.reply)
        if not parsed.complete:
            rating.repaired = True
            try:
                repair = self._repair_messages(prompt, rating.reply, parsed.missing)
                rating.repair_reply = await self._call(repair, REPAIR_OUTPUT_TOKENS)
                parsed = parsed.merge(parse_rating(rating.repair_reply), "repair")
            except Exception as exc:  # noqa: BLE001 - the first reply's scores are kept
                log.warning("CQED judge repair failed: %s: %s", type(exc).__name__, exc)
                rating.error = f"repair: {type(exc).__name__}: {exc}"[:300]
        _fill(rating, parsed)
        rating.seconds = round(time.perf_counter() - started, 3)
        return rating


def _fill(rating: Rating, parsed: ParsedRating) -> None:
    rating.scores = {
        p: {c: v for c, v in values.items() if c in CRITERIA} for p, values in parsed.scores.items()
    }
    rating.sources = dict(parsed.sources)
    rating.missing = list(parsed.missing)
    rating.complete = parsed.complete
