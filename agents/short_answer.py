"""The Writer's short answer: the answer in a few words, shown first, above the cited explanation.

The Writer asks for the answer alone, then for its reasons (``agents/writer.py``). Small models
drift from any format (bold markers, ``Answer:`` or ``Short answer:`` prefixes, the marker on a
line of its own, the answer and its reasons in one reply), so the parsers accept the common
variants: :func:`short_of` reads the answer turn, :func:`explanation_of` the reasons turn, and
:func:`split_short_answer` a reply that holds both.
"""

from __future__ import annotations

import re

from core.text import CITATION_MARK, sentence_pieces

MARKER = re.compile(
    r"^\s*[*_#>\-\s]*(?:the\s+)?(?:short\s+answer|final\s+answer|answer|答案|回答)\s*[*_]*\s*[:：]\s*[*_]*\s*(.*)$",
    re.IGNORECASE,
)
BODY_LABEL = re.compile(
    r"^\s*[*_]*(?:because|explanation|reason|why)[*_]*\s*[:：]\s*", re.IGNORECASE | re.MULTILINE
)
MAX_MARKER_LINE = 3  # the marker must be among the first lines to count
MAX_FALLBACK_WORDS = 30
MAX_SHORT_LINE_WORDS = 12


def clean_short(text: str) -> str:
    """The short answer without citations, markdown emphasis, wrapping quotes or a final period."""
    text = CITATION_MARK.sub("", text)
    text = re.sub(r"[*_`]+", "", text).strip()
    text = text.strip(" \"'“”‘’")
    return text.rstrip(" .。").strip()


def split_short_answer(text: str) -> tuple[str, str]:
    """Split the Writer's output into ``(short answer, explanation)``, the explanation without its
    ``Because:`` label (see :func:`_split`)."""
    short, body = _split(text)
    return short, BODY_LABEL.sub("", body, count=1).strip()


def _split(text: str) -> tuple[str, str]:
    """Split the Writer's output into ``(short answer, explanation)``.

    The explanation keeps its citations. When the short answer's line is all there is, the
    explanation is that line (citations included) so nothing the Writer cited is lost. Without a
    marker, a first line of at most 12 words followed by more text is the short answer (the prompt
    ends in ``Answer:``, so the model often writes it bare); otherwise the short answer is the
    first sentence (cut to 30 words) and the explanation the whole text.
    """
    lines = text.strip().splitlines()
    content = [i for i, line in enumerate(lines) if line.strip()][:MAX_MARKER_LINE]
    for position, index in enumerate(content):
        match = MARKER.match(lines[index])
        if not match:
            continue
        value = match.group(1).strip()
        rest = lines[index + 1 :]
        if not value and rest:  # "Answer:" on a line of its own, the answer on the next one
            following = next((i for i, line in enumerate(rest) if line.strip()), None)
            if following is not None:
                value = rest[following].strip()
                rest = rest[following + 1 :]
        before = [lines[i] for i in content[:position]]
        body = "\n".join([*before, *rest]).strip()
        short = clean_short(value)
        if short:
            return short, body or value
    stripped = text.strip()
    lines = [line.strip() for line in stripped.splitlines() if line.strip()]
    if len(lines) > 1 and len(lines[0].split()) <= MAX_SHORT_LINE_WORDS:  # the answer on a line of its own
        return clean_short(lines[0]), "\n".join(lines[1:])
    first = sentence_pieces(stripped)[0][0] if stripped else ""
    words = clean_short(first).split()
    return " ".join(words[:MAX_FALLBACK_WORDS]), stripped


def short_of(reply: str) -> str:
    """The short answer in a reply to an answer-only prompt: its first line, without a marker."""
    lines = [line for line in reply.splitlines() if line.strip()]
    if not lines:
        return ""
    match = MARKER.match(lines[0])
    value = lines[0]
    if match:
        value = match.group(1) if match.group(1).strip() else (lines[1] if len(lines) > 1 else "")
    return " ".join(clean_short(value).split()[:MAX_FALLBACK_WORDS])


def explanation_of(reply: str) -> str:
    """The reasons in a reply to "say why": without a repeated ``Answer:`` line or a ``Because:`` label."""
    lines = reply.strip().splitlines()
    if lines and MARKER.match(lines[0]) and len(lines) > 1:
        lines = lines[1:]
    return BODY_LABEL.sub("", "\n".join(lines).strip(), count=1).strip()
