"""Text helpers the agents and the evaluations share: content words, citation marks, sentences,
and the conversation history as prompt text."""

from __future__ import annotations

import re

from langchain_core.messages import AnyMessage

from models.structured import message_text

CITATION = re.compile(r"\[(\d{1,3})\]")
"""A ``[n]`` citation; group 1 is the source number."""
CITATION_MARK = re.compile(r"\s*\[(\d{1,3})\]")
"""A citation with the space before it, for cutting it out of a sentence."""
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
"""The space after a sentence's final punctuation (Latin or CJK): ``SENTENCE_END.split(text)``."""
WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
STOPWORDS = frozenset(
    "the and for with that this these those from into about can could would should will you your "
    "are was were has have had not but its it's their there then than also such which what when where "
    "why how who whom whose does did use used using may might more most other some any all each one".split()
)
HISTORY_TURNS = 6


def content_words(text: str, stopwords: frozenset[str] = STOPWORDS) -> set[str]:
    """Lower-cased words of three or more letters or digits, without ``stopwords``."""
    return {word for word in WORD.findall(text.lower()) if word not in stopwords}


def support(claim: str, source: str) -> float:
    """Share of the claim's content words (citations aside) found in ``source`` (0 when it has none):
    the lexical stand-in for an NLI check, used by the Writer's citation check and the evaluation."""
    words = content_words(CITATION_MARK.sub(" ", claim))
    return len(words & content_words(source)) / len(words) if words else 0.0


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after ``.!?`` and their CJK forms)."""
    return SENTENCE_END.split(text.strip())


def format_history(messages: list[AnyMessage], turns: int = HISTORY_TURNS) -> str:
    """The last ``turns`` exchanges as ``User:`` / ``Assistant:`` lines ("(none)" when empty)."""
    lines = [
        f"{'User' if message.type == 'human' else 'Assistant'}: {message_text(message)[:600]}"
        for message in messages[-2 * turns :]
        if message.type in {"human", "ai"}
    ]
    return "\n".join(lines) or "(none)"
