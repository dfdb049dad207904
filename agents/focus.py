"""Evidence compression: the sentences of a passage that matter for what is being asked.

On this CPU reading is prompt processing, and prompt processing is most of a run's time: the
Writer read about twice RAG's tokens on HotpotQA dev (1,549 vs 778 on average). A passage is cut
to its first sentence (it names and defines the passage's subject) and then its sentences that
share the most informative words with the questions asked, kept in their original order, within
a character budget. Words are weighted by how rare they are among the sentences being read (an
IDF over this call's sentences, no fitted vocabulary), so a name or a number counts more than
"the" or "which".
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from core.text import sentences

WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be been by did do does for from had has have he her his how in is it its of on or"
    " she that the their them they this to was were what when where which who whom whose why will with".split()
)


def terms(text: str) -> set[str]:
    """The content words of ``text``, lower-cased, with a plural ``s`` dropped."""
    words = (word.lower() for word in WORD.findall(text))
    return {
        word[:-1] if len(word) > 3 and word.endswith("s") else word for word in words if word not in STOPWORDS
    }


def focus_passages(texts: Sequence[str], queries: Sequence[str], max_chars: int) -> list[str]:
    """Each passage of ``texts`` cut to its first sentence and its sentences that best match
    ``queries``, together within ``max_chars`` (a share per passage; whole passages when all fit).

    The budget is split evenly, and what a short passage leaves is given to the others.
    """
    if sum(len(text) for text in texts) <= max_chars:
        return list(texts)
    split = [[s for s in sentences(text) if s.strip()] for text in texts]
    wanted: set[str] = set().union(*(terms(query) for query in queries)) if queries else set()
    frequency = Counter(term for group in split for sentence in group for term in terms(sentence))
    count = sum(len(group) for group in split) or 1
    weight = {term: math.log(1 + count / frequency.get(term, 1)) for term in wanted}
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # short ones first: they give back room
    kept: dict[int, str] = {}
    left = max_chars
    for position, index in enumerate(order):
        share = left // (len(order) - position)
        kept[index] = _cut(split[index], weight, share)
        left -= len(kept[index])
    return [kept[i] for i in range(len(texts))]


def _cut(group: list[str], weight: dict[str, float], budget: int) -> str:
    """The first sentence and the best-scoring others of one passage that fit ``budget`` characters."""
    if sum(len(s) + 1 for s in group) <= budget or not group:
        return " ".join(group)
    scores = [sum(weight.get(term, 0.0) for term in terms(sentence)) for sentence in group]
    chosen = {0}
    used = len(group[0])
    for index in sorted(range(1, len(group)), key=lambda i: -scores[i]):
        if scores[index] <= 0:
            break
        if used + len(group[index]) + 1 <= budget:
            chosen.add(index)
            used += len(group[index]) + 1
    if used > budget:  # the first sentence alone is too long: keep its head
        return group[0][: max(budget - 1, 0)].rstrip() + "…"
    return " ".join(group[i] for i in sorted(chosen))
