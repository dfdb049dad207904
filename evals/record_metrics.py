"""One system's scores on one question record, and the systems a record holds (``aisearch`` under
test, ``rag`` its baseline, ``closed_book``).

A record, one per question, as the runner writes it to ``questions.jsonl``::

    {"id", "question", "gold", "aliases", "type", "level", "supporting_titles",
     "systems": {"aisearch": {...}, "rag": {...}, "closed_book": {...}},
     "judge": {"aisearch": {"correctness", "faithfulness"}, ..., "pairwise": {"aisearch_vs_rag": "win"}}}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evals.metrics import citation_scores, cover, exact_match, title_recall, token_f1

SYSTEM = "aisearch"
BASELINE = "rag"
SYSTEM_ORDER = ("aisearch", "rag", "closed_book")
METRICS = (
    "em",
    "f1",
    "cover",
    "evidence_title_recall",
    "answer_in_evidence",
    "citation_title_recall",
    "citation_precision",
    "citation_recall",
)
YES_NO = {"yes", "no"}


def ordered_systems(names: Iterable[str]) -> list[str]:
    """``names`` in the reports' order: aisearch, rag, closed-book, then any other alphabetically."""
    seen = set(names)
    return [s for s in SYSTEM_ORDER if s in seen] + sorted(seen - set(SYSTEM_ORDER))


def system_output(record: Mapping[str, Any], system: str) -> dict[str, Any] | None:
    """``system``'s output in ``record``, or None when the record has none."""
    result = (record.get("systems") or {}).get(system)
    return result if isinstance(result, dict) else None


def _passages(output: Mapping[str, Any]) -> dict[int, str]:
    """Citation number -> cited passage text (title and content), via the citation's evidence id."""
    evidence = [e for e in output.get("evidence") or [] if isinstance(e, dict)]
    by_id = {e.get("id"): f"{e.get('title') or ''} {e.get('content') or ''}".strip() for e in evidence}
    citations = [c for c in output.get("citations") or [] if isinstance(c, dict)]
    if not citations:  # no citation table: numbers index the evidence list directly
        return {i: by_id[e.get("id")] for i, e in enumerate(evidence, start=1)}
    return {int(c["n"]): by_id.get(c.get("evidence_id"), "") for c in citations if c.get("n") is not None}


def scored_value(value: float | None) -> float:
    """EM or F1 of a system the record has (:func:`record_metrics` leaves them None only for a
    system the record does not have)."""
    if value is None:
        raise ValueError("EM and F1 are scored for every system a record has")
    return value


def _answer_and_golds(record: Mapping[str, Any], output: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The answer scored (the short answer, or the prediction when there is none) and what it may
    match (the gold answer and every alias)."""
    prediction = output.get("prediction") or ""
    short = output.get("short")
    golds = [record.get("gold") or "", *(alias for alias in record.get("aliases") or [] if alias)]
    return (prediction if short is None else short), golds


def answer_em(record: Mapping[str, Any], system: str) -> float:
    """``system``'s exact match on ``record``, as :func:`record_metrics` scores it (0 when the system
    errored or is missing)."""
    output = system_output(record, system)
    if output is None or output.get("error") is not None:
        return 0.0
    short, golds = _answer_and_golds(record, output)
    return max(exact_match(short, g) for g in golds)


def record_metrics(record: Mapping[str, Any], system: str) -> dict[str, float | None]:
    """Score one system's output on one question record.

    EM and F1 compare ``short`` (or ``prediction`` when there is no short answer) with ``gold``;
    cover looks for the gold answer in the full ``prediction``; the title recalls compare the
    supporting titles with the titles of the evidence and of the citations; citation
    precision/recall check each sentence's cited passages lexically (see
    :func:`evals.metrics.citation_scores`). A system that errored scores 0 on everything it did
    not produce.

    Args:
        record: one per-question record.
        system: the system's key under ``record["systems"]``.

    Returns:
        ``{em, f1, cover, evidence_title_recall, citation_title_recall, citation_precision,
        citation_recall}``; a value is ``None`` when it is undefined (no supporting titles, a
        system that does not cite, no citation or no factual sentence to check) or the system is
        missing from the record.
    """
    output = system_output(record, system)
    if output is None:
        return dict.fromkeys(METRICS)
    gold = record.get("gold") or ""
    prediction = output.get("prediction") or ""
    short, golds = _answer_and_golds(record, output)
    errored = output.get("error") is not None
    gold_titles = [t for t in record.get("supporting_titles") or [] if t]
    evidence = [e for e in output.get("evidence") or [] if isinstance(e, dict)]
    citations = [c for c in output.get("citations") or [] if isinstance(c, dict)]
    sentences = [s for s in output.get("sentences") or [] if isinstance(s, dict)]
    cites = bool(sentences or citations)

    metrics: dict[str, float | None] = {  # the best match among the golds counts
        "em": answer_em(record, system),
        "f1": 0.0 if errored else max(token_f1(short, g) for g in golds),
        "cover": 0.0 if errored else cover(f"{short} {prediction}", gold),
        "evidence_title_recall": (
            title_recall(gold_titles, [e.get("title") or "" for e in evidence]) if gold_titles else None
        ),
        # where the answer was lost: in retrieval (not in the evidence) or in reading (in it)
        "answer_in_evidence": (
            cover(" ".join(f"{e.get('title', '')} {e.get('content', '')}" for e in evidence), gold)
            if evidence and gold and gold.strip().lower() not in YES_NO
            else None
        ),
        "citation_title_recall": (
            title_recall(gold_titles, [c.get("title") or "" for c in citations])
            if gold_titles and cites
            else None
        ),
        "citation_precision": None,
        "citation_recall": None,
    }
    if sentences:
        passages = _passages(output)
        pairs = [
            (s.get("text") or "", [passages.get(int(n), "") for n in s.get("cited") or []]) for s in sentences
        ]
        scores = citation_scores(pairs)
        metrics["citation_precision"] = scores["precision"]
        metrics["citation_recall"] = scores["recall"]
    return metrics
