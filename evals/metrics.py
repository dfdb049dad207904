"""Answer metrics for the QA evaluation: pure functions, no model, no I/O.

* ``exact_match`` / ``token_f1`` follow the SQuAD normalisation and HotpotQA's official scorer
  (a yes/no/noanswer answer that differs from the gold scores 0 F1).
* ``cover`` asks whether the gold answer appears anywhere in a long answer (word-boundary aware),
  which is fairer than EM for a system that writes sentences rather than a short span.
* ``citation_scores`` is a lexical analogue of the citation precision/recall of seed 001
  (Eq. 29-30): with no NLI model on this CPU default, a passage "supports" a sentence when it
  contains at least :data:`SUPPORT_THRESHOLD` of the sentence's content words. The thresholds match
  ``agents/citations.py`` (attribution at 0.4, four content words for a factual claim), but the code
  is kept separate so the metric does not move when the agent's checker is tuned.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

from core.text import CITATION_MARK, support
from core.text import content_words as text_content_words

Outcome = Literal["win", "tie", "lose"]

ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = frozenset(string.punctuation)
YES_NO = frozenset({"yes", "no", "noanswer"})

SUPPORT_THRESHOLD = 0.4
MIN_FACTUAL_WORDS = 4  # "more than three words": shorter sentences are connectives, not claims


def normalize_answer(s: str | None) -> str:
    """SQuAD normalisation: lower-case, drop punctuation and the articles a/an/the, collapse spaces.

    Args:
        s: the answer text (``None`` counts as empty).
    """
    text = (s or "").lower()
    text = "".join(ch for ch in text if ch not in PUNCTUATION)
    text = ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(pred: str | None, gold: str | None) -> float:
    """1.0 when the normalised prediction equals the normalised gold answer, else 0.0.

    Args:
        pred: the predicted (short) answer.
        gold: the gold answer.
    """
    return float(normalize_answer(pred) == normalize_answer(gold))


def token_f1(pred: str | None, gold: str | None) -> float:
    """SQuAD token F1 between the normalised answers, with HotpotQA's yes/no rule.

    If either normalised side is ``yes``, ``no`` or ``noanswer`` and the two differ, the score is 0
    (partial overlap with a yes/no answer means nothing). Two empty answers also score 0, as in the
    official script.

    Args:
        pred: the predicted (short) answer.
        gold: the gold answer.
    """
    p, g = normalize_answer(pred), normalize_answer(gold)
    if (p in YES_NO or g in YES_NO) and p != g:
        return 0.0
    p_tokens, g_tokens = p.split(), g.split()
    same = sum((Counter(p_tokens) & Counter(g_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p_tokens), same / len(g_tokens)
    return 2 * precision * recall / (precision + recall)


def cover(text: str | None, gold: str | None) -> float:
    """1.0 when the normalised gold answer occurs, as whole words, in the normalised text.

    Both sides are padded with spaces so ``"art"`` does not match inside ``"arthurs"``. An empty
    gold answer never counts as covered.

    Args:
        text: the full answer text.
        gold: the gold answer.
    """
    g = normalize_answer(gold)
    if not g:
        return 0.0
    return float(f" {g} " in f" {normalize_answer(text)} ")


def title_recall(gold_titles: Iterable[str], titles: Iterable[str]) -> float:
    """Share of the distinct gold titles present in ``titles`` (0.0 when there are no gold titles).

    Args:
        gold_titles: the titles that should have been found (HotpotQA supporting facts).
        titles: the titles that were retrieved or cited.
    """
    gold = {t for t in gold_titles if t}
    return len(gold & set(titles)) / len(gold) if gold else 0.0


def content_words(text: str | None) -> set[str]:
    """The content words of ``text`` as the Writer's citation check counts them, citations aside."""
    return text_content_words(CITATION_MARK.sub(" ", text or ""))


def supports(sentence: str, passage: str, threshold: float = SUPPORT_THRESHOLD) -> bool:
    """Whether the passage lexically supports the sentence (``support >= threshold``).

    Args:
        sentence: the claim.
        passage: the cited source text.
        threshold: the minimum share of the claim's content words the passage must contain.
    """
    return support(sentence, passage) >= threshold


def citation_scores(
    sentences_with_citations: Sequence[tuple[str, Sequence[str | int]]],
    passages: Sequence[str] | None = None,
    threshold: float = SUPPORT_THRESHOLD,
) -> dict[str, float | int | None]:
    """Citation precision and recall with a lexical support proxy (seed 001 Eq. 29-30 analogue).

    * precision: share of (sentence, cited passage) pairs where the passage supports the sentence;
    * recall: share of factual sentences (at least :data:`MIN_FACTUAL_WORDS` content words) that
      carry at least one supporting citation.

    A score whose denominator is zero (no citations at all, or no factual sentence) is ``None`` so
    an average over questions can skip it instead of counting it as a failure.

    Args:
        sentences_with_citations: ``(sentence_text, [cited passages])`` pairs, in answer order. A
            cited passage is its text, or a 1-based citation number resolved against ``passages``
            (a number with no passage behind it counts as an unsupported citation).
        passages: the numbered sources, needed only when citations are given as numbers.
        threshold: the support share that counts as "supported".

    Returns:
        ``{"precision", "recall", "citations", "supported_citations", "factual_sentences",
        "supported_sentences"}``.
    """
    sources = list(passages or [])

    def text_of(cited: str | int) -> str:
        if isinstance(cited, int):
            return sources[cited - 1] if 1 <= cited <= len(sources) else ""
        return cited

    citations = supported_citations = factual = supported_sentences = 0
    for sentence, cited in sentences_with_citations:
        hits = [supports(sentence, text_of(c), threshold) for c in cited]
        citations += len(hits)
        supported_citations += sum(hits)
        if len(content_words(sentence)) >= MIN_FACTUAL_WORDS:
            factual += 1
            supported_sentences += any(hits)
    return {
        "precision": supported_citations / citations if citations else None,
        "recall": supported_sentences / factual if factual else None,
        "citations": citations,
        "supported_citations": supported_citations,
        "factual_sentences": factual,
        "supported_sentences": supported_sentences,
    }


def win_tie_lose(a: float, b: float, eps: float = 1e-9) -> Outcome:
    """Side-by-side outcome of score ``a`` against score ``b`` (a tie within ``eps``).

    Args:
        a: the score of the system under test.
        b: the score of the baseline.
        eps: the tolerance under which the two count as tied.
    """
    if a > b + eps:
        return "win"
    if b > a + eps:
        return "lose"
    return "tie"
