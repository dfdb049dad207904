"""Question sets for ``aisearch eval qa``, loaded from the path the user gives (never copied here).

* HotpotQA-format JSONL (``../shared/data/hotpotqa/dev.jsonl``): ``id``, ``question``, ``answer``,
  ``type``, ``level``, ``supporting_titles``.
* The papers' example queries with the route each should take (``evals/data/regression.jsonl``,
  written for this project): ``id``, ``question``, ``expected_route``, optional ``answer``.
* SRSA's contextual queries (``../shared/data/cqed/queries.jsonl``): ``id``, ``query`` (read as the
  ``question``), no answer.

Selection: ``--split`` keeps the tuning part or the held-out part (fixed by a hash of each
question's id: about a third is held out), then ``--seed`` shuffles (deterministically) before
``--offset`` and ``--n`` cut the slice. Tune on the tuning part only; the held-out part says
whether a change generalises.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Literal

from evals.data_files import id_bucket, json_lines

Split = Literal["tune", "held_out"]
SPLITS: tuple[str, ...] = ("tune", "held_out", "all")
SPLIT_SALT = "aisearch-split:"  # not the id alone: MuSiQue's sample was itself drawn by sha256(id)
HELD_OUT_SHARE = 3  # one question in three

REGRESSION_SET = Path(__file__).resolve().parent / "data" / "regression.jsonl"


class DatasetError(ValueError):
    """A question file is missing or malformed."""


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Every object of a JSONL file.

    Raises:
        DatasetError: When the file is missing or a line is not a JSON object.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise DatasetError(f"question file not found: {path}")
    rows = []
    for number, row in json_lines(path, DatasetError):
        if isinstance(row, dict) and "question" not in row and "query" in row:
            row["question"] = row["query"]  # SRSA's contextual queries (CQED) name it ``query``
        if not isinstance(row, dict) or not str(row.get("question", "")).strip():
            raise DatasetError(f"{path}:{number}: each line needs a non-empty 'question'")
        row.setdefault("id", f"q{number}")
        row["id"] = str(row["id"])
        rows.append(row)
    return rows


def split_of(question_id: str) -> Split:
    """The part a question belongs to, fixed by its id: ``held_out`` for about a third."""
    return "held_out" if id_bucket(SPLIT_SALT, question_id, HELD_OUT_SHARE) == 0 else "tune"


def select(
    rows: list[dict[str, Any]],
    n: int | None = None,
    offset: int = 0,
    seed: int | None = None,
    split: str = "all",
    kind: str | None = None,
) -> list[dict[str, Any]]:
    """The slice ``[offset, offset + n)`` of ``rows`` in ``split`` (and of question type ``kind``,
    e.g. ``comparison``), shuffled first with ``seed`` when given."""
    if split not in SPLITS:
        raise DatasetError(f"unknown split {split!r} (choose from {', '.join(SPLITS)})")
    ordered = [row for row in rows if split == "all" or split_of(row["id"]) == split]
    if kind is not None:
        kinds = sorted({str(row.get("type")) for row in ordered})
        ordered = [row for row in ordered if row.get("type") == kind]
        if not ordered:
            raise DatasetError(f"no question of type {kind!r} (the types here: {', '.join(kinds)})")
    if seed is not None:
        random.Random(seed).shuffle(ordered)
    end = None if n is None else offset + n
    return ordered[offset:end]


def load_questions(
    path: str | Path,
    n: int | None = None,
    offset: int = 0,
    seed: int | None = None,
    split: str = "all",
    kind: str | None = None,
) -> list[dict[str, Any]]:
    """Questions of a HotpotQA-format or regression-set file, selected by
    ``split``/``kind``/``n``/``offset``/``seed``."""
    return select(read_jsonl(path), n, offset, seed, split, kind)
