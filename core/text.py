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
# a piece that ends like an abbreviation or initials ("M.D.", "U.S.", "J.", "St.") runs on
ABBREVIATION_END = re.compile(
    r"(\b[A-Za-z]\.|\b(?:[A-Z]\.){2,}|\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Inc|Co|Ltd|vs|No|Mt|Ft)\.)$"
)
CONTINUES = re.compile(r"^[a-z0-9(\[,;:–-]")  # the next piece continues the sentence
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
    """The sentences of ``text`` (split after ``.!?`` and their CJK forms, not after an
    abbreviation or initials: :func:`sentence_pieces`)."""
    return [sentence for sentence, _ in sentence_pieces(text.strip())]


def sentence_pieces(text: str) -> list[tuple[str, str]]:
    """``text`` as (sentence, the space after it) pairs, not cut after an abbreviation or initials
    ("Michael J. Fox", "Doogie Howser, M.D. (1989)"): joining every pair gives ``text`` back."""
    pieces: list[tuple[str, str]] = []
    cursor = 0
    for gap in SENTENCE_END.finditer(text):
        pieces.append((text[cursor : gap.start()], gap.group()))
        cursor = gap.end()
    pieces.append((text[cursor:], ""))
    merged: list[tuple[str, str]] = []
    for sentence, space in pieces:
        if merged and (ABBREVIATION_END.search(merged[-1][0]) or CONTINUES.match(sentence)):
            previous, space_before = merged[-1]
            merged[-1] = (previous + space_before + sentence, space)
        else:
            merged.append((sentence, space))
    return merged


def format_history(messages: list[AnyMessage], turns: int = HISTORY_TURNS) -> str:
    """The last ``turns`` exchanges as ``User:`` / ``Assistant:`` lines ("(none)" when empty)."""
    lines = [
        f"{'User' if message.type == 'human' else 'Assistant'}: {message_text(message)[:600]}"
        for message in messages[-2 * turns :]
        if message.type in {"human", "ai"}
    ]
    return "\n".join(lines) or "(none)"
