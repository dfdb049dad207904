"""Query-focused snippets of bounded length."""

from __future__ import annotations

import re

from tools.index.bm25 import tokenize

SNIPPET_CHARS = 600
_SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n\s*\n")


def snippet(text: str, query: str, limit: int = SNIPPET_CHARS) -> str:
    """The stretch of ``text`` (whole sentences where possible, at most ``limit`` characters) that
    holds the most query words; ``…`` marks where text was cut."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    budget = limit - 4  # room for the two ellipses
    sentences = [s for s in (" ".join(part.split()) for part in _SENTENCE.split(text)) if s]
    terms = set(tokenize(query))
    best_start, best_score = 0, -1
    for start in range(len(sentences)):
        score, size = 0, 0
        for sentence in sentences[start:]:
            if size and size + len(sentence) + 1 > budget:
                break
            size += len(sentence) + 1
            score += len(terms & set(tokenize(sentence)))
        if score > best_score:
            best_start, best_score = start, score
    chosen: list[str] = []
    size = 0
    for sentence in sentences[best_start:]:
        if chosen and size + len(sentence) + 1 > budget:
            break
        chosen.append(sentence)
        size += len(sentence) + 1
    body = " ".join(chosen)[:budget]
    prefix = "… " if best_start else ""
    suffix = "" if best_start + len(chosen) >= len(sentences) and len(" ".join(chosen)) <= budget else " …"
    return f"{prefix}{body}{suffix}"
