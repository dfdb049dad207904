"""A run's per-question records on disk: ``questions.jsonl``, the verdicts judged after the run
(``judge.jsonl``) and the run's ``summary.json``, read tolerantly (a run killed mid-write leaves a
truncated last line; a resumed run writes a question again)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from evals.summary import summarise
from tools.index.jsonfiles import json_objects

log = logging.getLogger(__name__)

RECORDS = "questions.jsonl"  # a run's per-question records
VERDICTS = "judge.jsonl"  # the judge's verdicts given after the run (``aisearch eval judge``)
SUMMARY = "summary.json"  # the run's summary (``evals/summary.py``)


def load_records(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file of per-question records, tolerating a crash mid-write.

    Blank lines are skipped; a line that is not a JSON object (typically the truncated last line of
    a run that was killed) is skipped with a warning. When the same ``id`` appears twice (a resumed
    run re-answering a question) the last record wins, at the position of the first.

    Args:
        path: the ``questions.jsonl`` file.

    Returns:
        The records in file order; an empty list when the file does not exist.
    """
    path = Path(path)
    if not path.exists():
        return []
    by_key: dict[str, dict[str, Any]] = {}
    for number, record in json_objects(path.read_text(encoding="utf-8"), path):
        key = str(record["id"]) if record.get("id") is not None else f"#line{number}"
        by_key[key] = record
    return list(by_key.values())


def load_run_records(run_dir: str | Path) -> list[dict[str, Any]]:
    """A run's records, each with the verdicts ``aisearch eval judge`` gave it later (when the run
    itself had no judge), from ``judge.jsonl`` beside them."""
    run = Path(run_dir)
    records = load_records(run / RECORDS)
    verdicts = {str(v["id"]): v for v in load_records(run / VERDICTS)}
    for record in records:
        later = verdicts.get(str(record.get("id")))
        if later is not None and not record.get("judge"):
            record["judge"], record["judge_seconds"] = later.get("judge"), later.get("judge_seconds")
    return records


def load_run(run_dir: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A run's records and its summary; the summary recomputed from the records (with an empty
    config) when ``summary.json`` is missing or unreadable (a run that was interrupted)."""
    run = Path(run_dir)
    records = load_run_records(run)
    path = run / SUMMARY
    if path.exists():
        try:
            return records, json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            log.warning("%s is not valid JSON (%s); recomputing the summary from the records", path, exc)
    return records, summarise(records, {})
