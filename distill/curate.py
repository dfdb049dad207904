"""``aisearch distill curate``: keep the teacher trajectories both judges pass, one or more per task.

Reads ``trajectories.jsonl`` (:mod:`distill.synthesize`), judges every sample
(:mod:`distill.judges`), and writes ``curated.jsonl`` (per task, the distinct passing call sets,
the one most samples agree on first: self-consistency) and ``curation.json`` with the number of
trajectories left after each stage. With ``references``, every training task left without a kept
trajectory gets its reference trajectory instead (:mod:`distill.references`), judged alike.
Curation is cheap and reruns from scratch.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from distill.judges import CORRECTNESS_STAGES, EFFICIENCY_STAGES, judge_correct, judge_efficient
from distill.references import reference_calls
from evals.bfcl_data import BfclTask
from evals.bfcl_score import Scorer
from evals.executor_prompts import target_text
from evals.run_records import load_records

log = logging.getLogger(__name__)


def curate(
    trajectories: Path,
    tasks: dict[str, BfclTask],
    scorer: Scorer,
    out_path: Path,
    per_task: int = 1,
    *,
    references: bool = False,
) -> dict[str, Any]:
    """Judge every trajectory of a known task; write the kept ones (and, with ``references``, a
    reference trajectory for every task in ``tasks`` left without one); return the stage counts.

    Raises:
        FileNotFoundError: When ``trajectories`` does not exist and ``references`` is off
            (synthesize first).
    """
    if trajectories.is_file():
        found = load_records(trajectories)
    elif references:
        found = []  # references alone: every task gets its own
    else:
        raise FileNotFoundError(f"no trajectories at {trajectories}: run `aisearch distill synthesize` first")
    records = [r for r in found if r.get("task_id") in tasks]
    lost: Counter[str] = Counter()
    passing: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for record in records:
        task = tasks[record["task_id"]]
        if record.get("failure"):
            lost["answered"] += 1
            continue
        judgement, reply = judge_correct(task, record.get("reply", ""), scorer)
        if judgement.passed and reply is not None:
            reference = None if task.relevance_only else [dict.fromkeys(c) for c in task.answer or []]
            judgement = judge_efficient(reply.calls, reference)
        if not judgement.passed or reply is None:
            lost[judgement.stage or "parsed"] += 1
            continue
        item = {
            "task_id": task.id,
            "category": task.category,
            "thought": reply.thought,
            "calls": reply.calls,
            "sample": record.get("sample"),
            "source": "teacher",
        }
        passing[task.id].append((json.dumps(reply.calls, sort_keys=True, default=str), item))
    kept: list[dict[str, Any]] = []
    for items in passing.values():
        votes = Counter(key for key, _ in items)
        seen: set[str] = set()
        for key, item in sorted(items, key=lambda pair: -votes[pair[0]]):
            if key not in seen and len(seen) < per_task:
                seen.add(key)
                kept.append({**item, "votes": votes[key]})
    filled = (
        _reference_trajectories([t for i, t in tasks.items() if i not in passing], scorer)
        if references
        else []
    )
    with open(out_path, "w", encoding="utf-8") as handle:
        for item in kept + filled:
            handle.write(json.dumps(item, ensure_ascii=False, default=str) + "\n")
    stages = ["answered", *CORRECTNESS_STAGES, *EFFICIENCY_STAGES]
    left, counts = len(records), {"trajectories": len(records)}
    for stage in stages:
        left -= lost[stage]
        counts[f"after_{stage}"] = left
    counts["tasks_with_a_kept_trajectory"] = len(passing)
    counts["tasks"] = len({r["task_id"] for r in records})
    counts["kept"] = len(kept)
    if references:
        counts["reference_trajectories"] = len(filled)
    log.info("curation: %s", counts)
    return counts


def _reference_trajectories(tasks: list[BfclTask], scorer: Scorer) -> list[dict[str, Any]]:
    """The reference trajectory of each task that has one and passes the correctness judge."""
    filled = []
    for task in tasks:
        calls = reference_calls(task)
        if calls is None:
            continue
        judgement, _ = judge_correct(task, target_text(calls, None), scorer)
        if not judgement.passed:
            log.warning("reference of %s fails the judge (%s): left out", task.id, judgement.reason)
            continue
        filled.append(
            {
                "task_id": task.id,
                "category": task.category,
                "thought": None,
                "calls": calls,
                "source": "reference",
            }
        )
    return filled
