"""Citation check and rewrite for the Writer's answer (seed 001 §5.3.3, with a lexical proxy).

PA-RAG verifies every claim against its cited documents with an NLI model and rewrites failing
citations. No NLI model ships for this CPU default, so support is measured lexically: the share of
a claim's content words found in a source. After the answer is written:

* a prose sentence that cites nothing gets the best-supporting source appended as ``[n]`` when
  that source covers enough of its words (small models often forget to cite);
* a citation whose source shares almost none of the sentence's words is dropped.

Both changes are recorded on the answer (``attributed``, ``dropped_citations``) so a reader can
tell the model's own citations from the checker's. Fenced code and a source's sentence quoted in
curly quotes (``agents/quote.py``: “…” [n]) are not prose to check: a quotation is its source's own
words, and splitting it at "J." or "Mr." would attribute half a sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.state import Evidence
from core.text import CITATION_MARK as CITATION
from core.text import content_words, sentence_pieces, support

NOT_PROSE = re.compile(r"```.*?(?:```|$)|“[^”]*”", re.DOTALL)  # fenced code, a quotation
MIN_WORDS = 4
ATTRIBUTE_SUPPORT = 0.4
KEEP_SUPPORT = 0.15


@dataclass
class CitationCheck:
    """What the check changed."""

    text: str
    attributed: list[dict[str, object]] = field(default_factory=list)
    dropped: list[dict[str, object]] = field(default_factory=list)


def _prose_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the text outside fenced code blocks and quotations."""
    spans, start = [], 0
    for block in NOT_PROSE.finditer(text):
        spans.append((start, block.start()))
        start = block.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if b > a]


def _check_sentence(sentence: str, sources: Sequence[Evidence], check: CitationCheck) -> str:
    cited = [int(n) for n in CITATION.findall(sentence)]
    if len(content_words(CITATION.sub("", sentence))) < MIN_WORDS:
        return sentence
    kept = sentence
    for n in cited:
        if 1 <= n <= len(sources) and sources[n - 1]["kind"] == "document":
            score = support(sentence, sources[n - 1]["content"] + " " + sources[n - 1]["title"])
            if score < KEEP_SUPPORT:
                kept = re.sub(rf"\s*\[{n}\]", "", kept, count=1)
                check.dropped.append({"n": n, "sentence": sentence.strip()[:200], "support": round(score, 2)})
    if CITATION.search(kept):
        return kept
    scores = [support(sentence, s["content"] + " " + s["title"]) for s in sources]
    best = max(range(len(scores)), key=scores.__getitem__, default=None)
    if best is None or scores[best] < ATTRIBUTE_SUPPORT:
        return kept
    body = kept.rstrip()
    trailing = kept[len(body) :]
    end = len(body.rstrip(".!?。！？:"))
    check.attributed.append({"n": best + 1, "sentence": body[:200], "support": round(scores[best], 2)})
    return f"{body[:end]} [{best + 1}]{body[end:]}{trailing}"


def check_citations(text: str, sources: Sequence[Evidence]) -> CitationCheck:
    """Attribute uncited prose sentences to their best-supporting source; drop unsupported citations."""
    check = CitationCheck(text)
    if not sources:
        return check
    pieces, cursor = [], 0
    for start, end in _prose_spans(text):
        pieces.append(text[cursor:start])
        prose = text[start:end]
        pieces.extend(
            _check_sentence(sentence, sources, check) + space for sentence, space in sentence_pieces(prose)
        )
        cursor = end
    pieces.append(text[cursor:])
    check.text = "".join(pieces)
    return check
