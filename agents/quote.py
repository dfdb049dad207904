"""A short answer explained by the source sentence that states it (extractive attribution).

A short answer (a name, a date, a number) is explained by the sentence of the sources that says it
word for word, cited: the claim is the source's own words, so it is as faithful as a citation can
be, and it costs no model call. A written explanation is a second model turn that decodes a
sentence, about a fifth of the Writer's time on this CPU. When no sentence both says the answer and
shares a word with the question (a yes/no, an answer the Writer put in its own words), the Writer
writes its explanation as before.

A comparison settled on yes/no readings ("Were A and B both actors?", "Which is a gun dog, A or
B?") is explained the same way, entity by entity: the sentence of each entity's own article that
best matches the question (:func:`quoted_readings`), the one its reading rests on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents.chain_answer import UNKNOWN
from agents.compare import Verdict, article_number
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
    return _quoted(sentence, n)


def quoted_readings(verdict: Verdict, sources: Sequence[Evidence], question: str) -> str | None:
    """The reasons of a comparison settled on yes/no readings, in the sources' own words: for each
    entity, the sentence of its own article sharing the most content words with the question (its
    opening sentence when none does), quoted and cited ("Fred Niblo: “Fred Niblo was an American
    actor, director and producer.” [2]").

    None for another form, an unsettled verdict, or an entity without an article of its own among
    the sources: the Writer then explains in its own words.
    """
    if verdict.answer is None or verdict.form not in ("both", "choice"):
        return None
    named = set().union(*(terms(entity) for entity in verdict.facts))
    asked = terms(question) - named
    quoted = []
    for entity in verdict.facts:
        n = article_number(entity, sources)
        sentences = passage_sentences(sources[n - 1]["content"]) if n is not None else []
        if n is None or not sentences:
            return None
        best = max(sentences, key=lambda sentence: len(asked & terms(sentence)))  # the first on a tie
        quoted.append(f"{entity}: {_quoted(best, n)}")
    return " ".join(quoted)


def _quoted(sentence: str, n: int) -> str:
    """``sentence`` quoted (cut at :data:`MAX_QUOTE_CHARS`) with its source number."""
    if len(sentence) > MAX_QUOTE_CHARS:
        sentence = sentence[:MAX_QUOTE_CHARS].rsplit(" ", 1)[0] + " …"
    inner = sentence.strip().replace("“", '"').replace("”", '"')  # one quotation, not nested ones
    return f"“{inner}” [{n}]"
