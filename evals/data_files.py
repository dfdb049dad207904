"""What every question file reader shares: JSON lines with their numbers, and a split fixed by id."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def json_lines(path: Path, error: type[Exception]) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of a JSONL file.

    Raises:
        error: When a line is not valid JSON (the message names the file and the line).
    """
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}:{number}: not valid JSON ({exc.msg})") from exc


def id_rank(key: str) -> str:
    """A sort key fixed by the sha256 of ``key``: a stable order that does not follow file order."""
    return hashlib.sha256(key.encode()).hexdigest()


def id_bucket(salt: str, key: str, buckets: int) -> int:
    """A bucket in ``[0, buckets)`` fixed by a salted sha256 of ``key`` (a split that never moves)."""
    digest = hashlib.sha256(f"{salt}{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % buckets
