"""Reading SRSA's CQED judge reply: the 0-5 scores of Model 1, 2 and 3 on four criteria.

The judge (``prompts/cqed_judge_*.md``) rates each model in prose ("Model 1: / Informativeness: 5,
because …") and ends with a CSV (``query, model, informativeness, completeness, novelty,
actionability``, the query in quotes). Small models bend that format, so the reader is tolerant
of what is unambiguous and strict about what is not:

* the CSV is found in a fenced block or after its header line anywhere in the reply (prose around
  it is ignored); a row is read from the right (the last four fields are the scores, the one before
  them the model), so a query left unquoted, with commas in it, still parses; a Markdown table
  (``| … | … |``) is read the same way;
* a model is ``Model 1``, ``model 1``, ``Model1`` or ``1``; a score is 0-5 (``4``, ``4.5``, ``4/5``);
  anything else makes that row unusable;
* when the CSV lacks a model, its scores are taken from the prose ratings (the last
  ``Model N:`` block that names scores), which are the judge's own numbers too;
* what is still missing is listed, never guessed: a rating is complete only with all four scores
  of all three models.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

CRITERIA = ("informativeness", "completeness", "novelty", "actionability")
POSITIONS = (1, 2, 3)
MAX_SCORE = 5.0

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_HEADER = re.compile(r"^\W*query\W*,?\W*model\b.*informativeness", re.IGNORECASE)
_MODEL = re.compile(r"^\W*(?:model\s*[_#-]?\s*)?([1-3])\W*$", re.IGNORECASE)
_SCORE = re.compile(r"^\s*\**\s*(\d+(?:\.\d+)?)\s*(?:/\s*5)?\s*\**\s*$")
_PROSE_HEADING = re.compile(r"^[\s#*>_-]*model\s*([1-3])\b[\s*_]*:?", re.IGNORECASE | re.MULTILINE)
_PROSE_SCORE = re.compile(
    r"\b(informativeness|completeness|novelty|actionability)\b\W{0,6}?(\d+(?:\.\d+)?)(?:\s*/\s*5)?",
    re.IGNORECASE,
)

Scores = dict[int, dict[str, float]]


@dataclass
class ParsedRating:
    """The scores read from one judge reply, by position (Model 1, 2, 3), and what is missing."""

    scores: Scores = field(default_factory=dict)
    sources: dict[int, str] = field(default_factory=dict)  # position -> "csv" | "prose" | "repair"
    missing: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """All four scores of all three models are there."""
        return not self.missing

    def merge(self, other: ParsedRating, source: str) -> ParsedRating:
        """These scores, with the complete models of ``other`` (a repair) filling or replacing them."""
        scores = {position: dict(values) for position, values in self.scores.items()}
        sources = dict(self.sources)
        for position, values in other.scores.items():
            if len(values) == len(CRITERIA):
                scores[position], sources[position] = dict(values), source
        return _finish(scores, sources)


def score_value(text: str) -> float | None:
    """A 0-5 score from ``4``, ``4.5``, ``4/5`` or ``**4**``; ``None`` for anything else."""
    match = _SCORE.match(text)
    if not match:
        return None
    value = float(match.group(1))
    return value if 0.0 <= value <= MAX_SCORE else None


def model_position(text: str) -> int | None:
    """1, 2 or 3 from ``Model 2``, ``model2`` or ``2``; ``None`` for anything else."""
    match = _MODEL.match(text.strip().strip('"'))
    return int(match.group(1)) if match else None


def _csv_candidates(reply: str) -> list[str]:
    """Text that may hold the CSV: fenced blocks with a header or rows, last first; then the reply
    from its last header line on."""
    blocks = [block for block in _FENCE.findall(reply) if "," in block or "|" in block]
    lines = reply.splitlines()
    headers = [i for i, line in enumerate(lines) if _HEADER.search(line)]
    tail = ["\n".join(lines[headers[-1] :])] if headers else []
    return list(reversed(blocks)) + tail


def _fields(line: str) -> list[str]:
    """The fields of one CSV row or Markdown table row."""
    stripped = line.strip()
    if stripped.startswith("|"):
        return [cell.strip() for cell in stripped.strip("|").split("|")]
    try:
        return next(csv.reader([stripped], skipinitialspace=True))
    except (csv.Error, StopIteration):
        return []


def _row(fields: list[str], header: list[str] | None) -> tuple[int, dict[str, float]] | None:
    """``(position, scores)`` of one row, by the header's names when they fit, else from the right."""
    if header and len(fields) == len(header) and "model" in header and set(CRITERIA) <= set(header):
        position = model_position(fields[header.index("model")])
        values = {name: score_value(fields[header.index(name)]) for name in CRITERIA}
    elif len(fields) >= 1 + len(CRITERIA):
        position = model_position(fields[-1 - len(CRITERIA)])
        values = dict(zip(CRITERIA, (score_value(v) for v in fields[-len(CRITERIA) :]), strict=True))
    else:
        return None
    if position is None:
        return None
    present = {name: value for name, value in values.items() if value is not None}
    return (position, present) if present else None


def parse_csv(text: str) -> Scores:
    """Scores by position from the first candidate CSV in ``text`` that yields any row."""
    for candidate in _csv_candidates(text):
        header: list[str] | None = None
        scores: Scores = {}
        for line in candidate.splitlines():
            if not line.strip() or set(line.strip()) <= set("|-: "):
                continue
            fields = _fields(line)
            if _HEADER.search(line):
                header = [name.strip().strip('"').lower() for name in fields]
                continue
            row = _row(fields, header)
            if row and row[0] not in scores:
                scores[row[0]] = row[1]
        if scores:
            return scores
    return {}


def parse_prose(text: str) -> Scores:
    """Scores by position from ``Model N:`` blocks with ``Criterion: score`` lines (the last block of
    each model that names any score wins: the judge first repeats the answers, then rates them)."""
    headings = list(_PROSE_HEADING.finditer(text))
    scores: Scores = {}
    for index, heading in enumerate(headings):
        end = headings[index + 1].start() if index + 1 < len(headings) else len(text)
        block = text[heading.end() : end]
        found: dict[str, float] = {}
        for match in _PROSE_SCORE.finditer(block):
            value = score_value(match.group(2))
            name = match.group(1).lower()
            if value is not None and name not in found:
                found[name] = value
        if found:
            scores[int(heading.group(1))] = found
    return scores


def _finish(scores: Scores, sources: dict[int, str]) -> ParsedRating:
    missing = []
    for position in POSITIONS:
        values = scores.get(position, {})
        if not values:
            missing.append(f"Model {position}")
        else:
            missing += [f"Model {position} {name}" for name in CRITERIA if name not in values]
    return ParsedRating(scores=scores, sources=sources, missing=missing)


def parse_rating(reply: str) -> ParsedRating:
    """The scores of Model 1-3 in a judge reply: the CSV's, completed from the prose ratings.

    Args:
        reply: the judge's whole reply (prose ratings, then the CSV).

    Returns:
        The scores by position, where each came from, and what is missing (empty when complete).
    """
    from_csv, from_prose = parse_csv(reply), parse_prose(reply)
    scores: Scores = {}
    sources: dict[int, str] = {}
    for position in POSITIONS:
        csv_values, prose_values = from_csv.get(position, {}), from_prose.get(position, {})
        if csv_values and (len(csv_values) == len(CRITERIA) or len(csv_values) >= len(prose_values)):
            scores[position], sources[position] = csv_values, "csv"
        elif prose_values:
            scores[position], sources[position] = prose_values, "prose"
    return _finish(scores, sources)
