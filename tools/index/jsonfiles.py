"""Small JSON files written atomically (temp file + rename) and read forgivingly, and JSON lines read
forgivingly (a torn or foreign line is skipped with a warning)."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temp file + rename), so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    tmp.replace(path)


def read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except json.JSONDecodeError:
        log.warning("%s is corrupt; treating it as missing", path)
        return default


def json_objects(text: str, source: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of every line of ``text`` that holds a JSON object.

    Blank lines are passed over; a line that is not JSON (typically the truncated last line of a
    writer that was killed) or not an object is skipped with a warning naming ``source`` and the line.
    """
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            log.warning("%s:%d: skipped a line that is not JSON (%s)", source, number, exc)
            continue
        if not isinstance(value, dict):
            log.warning("%s:%d: skipped a line that is not a JSON object", source, number)
            continue
        yield number, value
