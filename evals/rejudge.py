"""Judge a finished run afterwards: ``aisearch eval judge RUN``.

A long evaluation runs with ``--no-judge`` (the judge's calls would double its time and compete with
the systems it measures); this gives its answers the same verdicts later, with the judge the run
would have used or another endpoint, without answering any question again. Verdicts go to
``judge.jsonl`` beside the records (appended per question, so a stopped judging resumes), the
records themselves stay as the run wrote them, and the summary and report are recomputed with the
verdicts merged in (``evals/run_records.py load_run_records``): judge scores, NWR by the judge and the
judge's agreement with exact match, which says how far its verdicts can be trusted.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from evals.judge import Judge
from evals.qa_runner import judge_record
from evals.run_records import RECORDS, SUMMARY, VERDICTS, load_records, load_run_records
from evals.summary import summarise

log = logging.getLogger(__name__)


def to_judge(run_dir: Path, n: int | None = None) -> list[dict[str, Any]]:
    """The run's records that have no verdict yet (the first ``n`` of the run's order when given)."""
    records = load_run_records(run_dir)
    if n is not None:
        records = records[:n]
    return [record for record in records if not record.get("judge")]


async def judge_run(
    run_dir: str | Path, judge: Judge, *, n: int | None = None, show_progress: bool = False
) -> dict[str, Any]:
    """Give every unjudged record of ``run_dir`` its verdicts, then rewrite the summary and report.

    Returns:
        The recomputed summary, with ``judged_later`` (how many were judged now, in how long).
    """
    from tqdm import tqdm

    from evals.report import write_report

    run = Path(run_dir)
    if not (run / RECORDS).exists():
        raise FileNotFoundError(f"no run at {run} (no questions.jsonl)")
    todo = to_judge(run, n)
    started = time.perf_counter()
    with tqdm(total=len(todo), desc="judging", unit="q", file=sys.stderr, disable=not show_progress) as bar:
        for record in todo:
            question = {"id": record["id"], "question": record["question"], "answer": record.get("gold")}
            clock = time.perf_counter()
            verdicts = await judge_record(judge, question, record.get("systems") or {})
            line = {
                "id": record["id"],
                "judge": verdicts,
                "judge_seconds": round(time.perf_counter() - clock, 3),
            }
            with open(run / VERDICTS, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
            bar.update(1)
    previous = run / SUMMARY
    kept = json.loads(previous.read_text(encoding="utf-8")) if previous.exists() else {}
    config_path = run / "config.json"
    config = kept.get("config") or (  # the live run's config has its machine, versions and date
        json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
    )
    summary = summarise(load_run_records(run), config)
    for key in ("trajectory_checks", "langsmith"):  # what only the live run could know
        if key in kept:
            summary[key] = kept[key]
    summary["judged_later"] = {
        "now": len(todo),
        "total": len(load_records(run / VERDICTS)),
        "seconds": round(time.perf_counter() - started, 1),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    previous.write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    write_report(run)
    return summary
