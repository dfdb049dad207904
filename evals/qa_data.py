"""Question sets for ``aisearch eval qa``, loaded from the path the user gives (never copied here).

* HotpotQA-format JSONL (``../shared/data/hotpotqa/dev.jsonl``): ``id``, ``question``, ``answer``,
  ``type``, ``level``, ``supporting_titles``.
* The papers' example queries with the route each should take (``evals/data/regression.jsonl``,
  written for this project): ``id``, ``question``, ``expected_route``, optional ``answer``.
* SRSA's contextual queries (``../shared/data/cqed/queries.jsonl``): ``id``, ``query`` (read as the
  ``question``), no answer.

Selection: ``--seed`` shuffles (deterministically) before ``--offset`` and ``--n`` cut the slice.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

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
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
            if isinstance(row, dict) and "question" not in row and "query" in row:
                row["question"] = row["query"]  # SRSA's contextual queries (CQED) name it ``query``
            if not isinstance(row, dict) or not str(row.get("question", "")).strip():
                raise DatasetError(f"{path}:{number}: each line needs a non-empty 'question'")
            row.setdefault("id", f"q{number}")
            row["id"] = str(row["id"])
            rows.append(row)
    return rows


def select(
    rows: list[dict[str, Any]], n: int | None = None, offset: int = 0, seed: int | None = None
) -> list[dict[str, Any]]:
    """The slice ``[offset, offset + n)`` of ``rows``, shuffled first with ``seed`` when given."""
    ordered = list(rows)
    if seed is not None:
        random.Random(seed).shuffle(ordered)
    end = None if n is None else offset + n
    return ordered[offset:end]


def load_questions(
    path: str | Path, n: int | None = None, offset: int = 0, seed: int | None = None
) -> list[dict[str, Any]]:
    """Questions of a HotpotQA-format or regression-set file, selected by ``n``/``offset``/``seed``."""
    return select(read_jsonl(path), n, offset, seed)
