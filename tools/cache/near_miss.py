"""The near-miss guard of the answer cache: do two questions ask about the same things?

Embedding similarity alone cannot tell "When was Barack Obama born?" from "When was Michelle Obama
born?" (MiniLM cosine 0.9 and more) or "GDP of France in 2019" from "… in 2020": the words a
question turns on are a small part of its meaning. So a cached answer is served only when, on top
of the similarity, :func:`subject_mismatch` finds no difference in what the two questions name:

1. **Numbers** (digits, ordinals such as ``3rd``, numeral words such as ``twenty`` or ``second``)
   are the same set in both.
2. **Names**: each capitalised word of one question (``Obama``, ``GDP``, ``March``) occurs in the
   other (case aside). A sentence's first word counts too unless it is a function word or a
   request (``What``, ``Tell``). A question written without capitals beyond its sentence starts
   ("when was barack obama born?") carries no case to go by, so all its content words count as
   names.
3. **A swapped word**: when the two questions are the same words but for one word swapped (``before``
   for ``after``, ``start`` for ``end``) or one or two added (``vice president``, ``GDP per
   capita``), they differ, unless the changed words are grammatical glue (``is``/``'s``, ``a``/``the``,
   ``which``/``what``, ``do``/``can``) or only moved ("In 2019, what was…" / "What was … in 2019?"). A rewording
   larger than that is left to the similarity and to rules 1 and 2. Rule 3 also refuses synonyms
   (``tall``/``high``): a miss costs one run of the team, a false hit a wrong answer.

The tokenizer is Python's Unicode ``\\w+``; the function words are scikit-learn's English stop words
(a general list, not fitted to any question set) plus the auxiliaries and request verbs it lacks.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

TOKEN = re.compile(r"\d+(?:[.,]\d+)*(?:st|nd|rd|th)?|[^\W\d_]+|\d+", re.UNICODE)
SENTENCE_BREAK = re.compile(r"[.!?。！？:;\n]\s*$")
ORDINAL_DIGITS = re.compile(r"^(\d+)(st|nd|rd|th)$")
# numeral words are numbers, whatever their case ("one" is left out: mostly a pronoun)
CARDINALS = {
    word: str(value)
    for value, word in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
    if word != "_"
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80"}
CARDINALS |= {"ninety": "90", "hundred": "100", "thousand": "1000", "million": "10^6", "billion": "10^9"}
ORDINALS = {
    word: f"#{value}"
    for value, word in enumerate(
        "_ first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split()
    )
    if word != "_"
}
# what scikit-learn's list lacks among auxiliaries, and the verbs that open a request
EXTRA_FUNCTION_WORDS = frozenset(
    "did does doing done tell explain describe list give define compare summarize summarise "
    "know want wondering s t".split()
)
# words whose swap never changes what is asked: articles, the forms of be and do, which/what
GLUE = frozenset("a an the is are was were be s do does did can could which what".split())
SMALL_CHANGE = 2  # tokens a change may add or remove and still count as the same words


@lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """Function words: scikit-learn's English stop words plus :data:`EXTRA_FUNCTION_WORDS`."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | EXTRA_FUNCTION_WORDS


@dataclass(frozen=True)
class Reading:
    """What the guard reads off one question: its tokens, numbers and names (lower case)."""

    tokens: tuple[str, ...]
    numbers: frozenset[str]
    names: frozenset[str]


def number_of(token: str) -> str | None:
    """The normalised number a token states, or None (``1,000`` -> ``1000``, ``3rd`` -> ``#3``)."""
    lower = token.lower()
    if lower in CARDINALS:
        return CARDINALS[lower]
    if lower in ORDINALS:
        return ORDINALS[lower]
    ordinal = ORDINAL_DIGITS.match(lower)
    if ordinal:
        return f"#{int(ordinal.group(1))}"
    if lower[:1].isdigit():
        return lower.replace(",", "")
    return None


def read(text: str) -> Reading:
    """Tokens, numbers and names of ``text`` (see the module's rules 1 and 2)."""
    stop = function_words()
    tokens, numbers, capitalised = [], set(), set()
    cased = False
    for match in TOKEN.finditer(text):
        token = match.group()
        lower = token.lower()
        tokens.append(lower)
        number = number_of(token)
        if number is not None:
            numbers.add(number)
            continue
        if not token[0].isupper():
            continue
        initial = not text[: match.start()].strip() or bool(SENTENCE_BREAK.search(text[: match.start()]))
        if lower in stop:  # "I", and a sentence's "What" or "Tell", name nothing
            continue
        capitalised.add(lower)
        cased = cased or not initial
    if cased:
        names = capitalised
    else:  # no case to go by: every content word names something
        names = {token for token in tokens if token not in stop and number_of(token) is None}
    return Reading(tuple(tokens), frozenset(numbers), frozenset(names))


def swapped_words(first: tuple[str, ...], second: tuple[str, ...]) -> list[str]:
    """The non-glue words that differ when ``first`` and ``second`` are the same words but for
    small changes (rule 3); empty when they are identical, differ only in glue or in word order, or
    are reworded."""
    removed: Counter[str] = Counter()
    added: Counter[str] = Counter()
    matcher = SequenceMatcher(None, first, second, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        one_for_one = tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1
        small = tag in ("insert", "delete") and (i2 - i1) + (j2 - j1) <= SMALL_CHANGE
        if not (one_for_one or small):
            return []  # reworded: rule 3 has nothing to say
        removed.update(first[i1:i2])
        added.update(second[j1:j2])
    moved = removed & added
    changed = (removed - moved) + (added - moved)
    return sorted(word for word in changed.elements() if word not in GLUE)


def subject_mismatch(first: str, second: str) -> str | None:
    """Why ``first`` and ``second`` ask about different things, or None when nothing tells them apart.

    Returns a short reason: the numbers, the names or the swapped words that differ.
    """
    a, b = read(first), read(second)
    if a.numbers != b.numbers:
        return f"numbers differ: {sorted(a.numbers ^ b.numbers)}"
    missing = sorted((a.names - set(b.tokens)) | (b.names - set(a.tokens)))
    if missing:
        return f"names differ: {missing}"
    swapped = swapped_words(a.tokens, b.tokens)
    if swapped:
        return f"words differ: {swapped}"
    return None
