"""A short answer explained by the source sentence that states it (extractive attribution).

A short answer (a name, a date, a number) is explained by the sentence of the sources that says it
word for word, cited: the claim is the source's own words, so it is as faithful as a citation can
be, and it costs no model call. A written explanation is a second model turn that decodes a
sentence, about a fifth of the Writer's time on this CPU. When no sentence both says the answer and
shares a word with the question (a yes/no, an answer the Writer put in its own words), the Writer
writes its explanation as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents.chain_answer import UNKNOWN
from agents.focus import passage_sentences, terms
from core.state import Evidence

MAX_QUOTE_CHARS = 400  # a longer sentence is cut at a word, with an ellipsis


def quoted_reason(answer: str, sources: Sequence[Evidence], question: str) -> str | None:
    """The sentence of ``sources`` that says ``answer`` and best matches ``question``, quoted with
    its source number (``"…" [n]``); None when no source sentence says it.

    A sentence counts when it holds the answer as whole words (any case) and shares at least one
    content word with the question, its source's title included ("Mountrail County" for "Which
    county is Van Hook Township in?" from the passage titled "Van Hook Township"). The sentence
    sharing the most such words wins; the earlier source on a tie. The model's own knowledge is
    never quoted as a source.
    """
    answer = answer.strip()
    if not answer or answer == UNKNOWN:
        return None
    says = re.compile(rf"(?<!\w){re.escape(answer)}(?!\w)", re.IGNORECASE)
    asked = terms(question) - terms(answer)
    best: tuple[int, int, str] | None = None
    for n, item in enumerate(sources, start=1):
        if item["kind"] == "model":
            continue
        title = terms(item["title"])
        for sentence in passage_sentences(item["content"]):
            if not says.search(sentence):
                continue
            shared = len(asked & (terms(sentence) | title))
            if shared and (best is None or shared > best[0]):
                best = (shared, n, sentence)
    if best is None:
        return None
    _, n, sentence = best
    if len(sentence) > MAX_QUOTE_CHARS:
        sentence = sentence[:MAX_QUOTE_CHARS].rsplit(" ", 1)[0] + " …"
    inner = sentence.strip().replace("“", '"').replace("”", '"')  # one quotation, not nested ones
    return f"“{inner}” [{n}]"
