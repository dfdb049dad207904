"""``aisearch distill curate``: keep the teacher trajectories both judges pass, one or more per task.

Reads ``trajectories.jsonl`` (:mod:`distill.synthesize`), judges every sample
(:mod:`distill.judges`), and writes ``curated.jsonl`` (per task, the distinct passing call sets,
the one most samples agree on first: self-consistency) and ``curation.json`` with the number of
trajectories left after each stage. With ``references``, every training task left without a kept
trajectory gets its reference trajectory instead (:mod:`distill.references`), judged alike, and
``reference_limits`` caps how many a category gets (chosen by a hash of the task id, so a rerun
keeps the same ones) and ``reference_repeats`` writes each of a category's references that many
times (a category the student gets wrong most, seen more often): the mix is balanced per
behaviour, and ``curation.json`` reports how many targets decline, make one call or make
several. Curation is cheap and reruns from scratch.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from distill.judges import CORRECTNESS_STAGES, EFFICIENCY_STAGES, judge_correct, judge_efficient
from distill.references import reference_calls
from evals.bfcl_data import BfclTask
from evals.bfcl_score import Scorer
from evals.data_files import id_rank
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
    reference_limits: Mapping[str, int] | None = None,
    reference_repeats: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Judge every trajectory of a known task; write the kept ones (and, with ``references``, a
    reference trajectory for every task in ``tasks`` left without one, at most
    ``reference_limits[category]`` of a category, each written ``reference_repeats[category]``
    times); return the stage counts.

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
    filled, left_out = _within_limits(filled, reference_limits or {})
    repeats = reference_repeats or {}
    filled = [item for item in filled for _ in range(repeats.get(item["category"], 1))]
    with open(out_path, "w", encoding="utf-8") as handle:
        for item in kept + filled:
            handle.write(json.dumps(item, ensure_ascii=False, default=str) + "\n")
    stages = ["answered", *CORRECTNESS_STAGES, *EFFICIENCY_STAGES]
    left = len(records)
    counts: dict[str, Any] = {"trajectories": left}
    for stage in stages:
        left -= lost[stage]
        counts[f"after_{stage}"] = left
    counts["tasks_with_a_kept_trajectory"] = len(passing)
    counts["tasks"] = len({r["task_id"] for r in records})
    counts["kept"] = len(kept)
    if references:
        counts["reference_trajectories"] = len(filled)
        if left_out:
            counts["reference_trajectories_left_out"] = dict(sorted(left_out.items()))
        if repeats:
            counts["reference_repeats"] = dict(sorted(repeats.items()))
    counts["targets"] = dict(Counter(behaviour(item["calls"]) for item in kept + filled))
    log.info("curation: %s", counts)
    return counts


def behaviour(calls: list[Any]) -> str:
    """What a target teaches: to decline (no call), one call, or several in parallel."""
    return "decline" if not calls else "single" if len(calls) == 1 else "parallel"


def _within_limits(
    filled: list[dict[str, Any]], limits: Mapping[str, int]
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """At most ``limits[category]`` reference trajectories of each limited category, the ones whose
    task id hashes lowest (stable across reruns); the rest and the count left out per category."""
    by_hash = sorted(filled, key=lambda item: id_rank(item["task_id"]))
    taken: Counter[str] = Counter()
    chosen: set[str] = set()
    for item in by_hash:
        category = item["category"]
        if category not in limits or taken[category] < limits[category]:
            taken[category] += 1
            chosen.add(item["task_id"])
    left_out = Counter(item["category"] for item in filled if item["task_id"] not in chosen)
    return [item for item in filled if item["task_id"] in chosen], left_out


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
