"""The executor model's sub-queries for retrieval evaluation.

For each question, the same call the executor's search loop makes in its first round
(:func:`agents.search_queries.write_subqueries`, prompt ``executor_subqueries``). Results are
cached in a JSONL file (one ``{"id", "question", "model", "queries"}`` per line) so an interrupted
run resumes, and a later run with the same model reuses them.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from agents.search_queries import write_subqueries

log = logging.getLogger(__name__)


def _cached(path: Path, model_name: str) -> dict[str, list[str]]:
    if not path.exists():
        return {}
    cached: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            if record.get("model") == model_name:
                cached[str(record["id"])] = [str(q) for q in record["queries"]]
    return cached


async def executor_subqueries(
    questions: Sequence[dict[str, Any]],
    model: BaseChatModel,
    model_name: str,
    cache_path: str | Path,
    *,
    constrain: bool = False,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Sub-queries for every question (``id`` → queries), generated once per model and cached.

    Returns:
        ``{"queries": {id: [...]}, "generated": n, "seconds_per_question": s}``; the timing covers
        only the questions generated in this call.
    """
    from tqdm import tqdm

    path = Path(cache_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    queries = _cached(path, model_name)
    todo = [q for q in questions if str(q["id"]) not in queries]
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as out:
        for question in tqdm(todo, desc="sub-queries", file=sys.stderr, disable=not show_progress):
            written = await write_subqueries(model, question["question"], constrain=constrain)
            queries[str(question["id"])] = written
            record = {"id": question["id"], "question": question["question"], "model": model_name}
            out.write(json.dumps({**record, "queries": written}, ensure_ascii=False) + "\n")
            out.flush()
    seconds = time.perf_counter() - started
    log.info("wrote sub-queries for %d questions in %.1f s", len(todo), seconds)
    return {
        "queries": {str(q["id"]): queries[str(q["id"])] for q in questions},
        "generated": len(todo),
        "seconds_per_question": round(seconds / len(todo), 2) if todo else None,
    }
