"""``aisearch distill synthesize``: the teacher writes trajectories for the training tasks.

For each task of the training split the teacher (any chat model; the local 1.5B by default) is asked
``samples`` times in the executor's ``thought`` mode (:mod:`evals.executor_prompts`): a short thought,
then the calls as JSON. The first sample is greedy, the others are drawn at ``temperature`` so that
self-consistency can find a correct trajectory where the greedy one is wrong. With ``schema`` the
reply is constrained to the task's functions by a JSON schema (:func:`evals.executor_prompts.calls_schema`,
sent as ``response_format``; llama.cpp servers turn it into a grammar), so every sample is JSON
that names the task's functions with arguments of their types. Every task gets its
greedy sample before any gets a second, and the categories take turns, so a run stopped early
still covers them all. One JSON line per
sample is appended to ``trajectories.jsonl`` as soon as it is written, so a stopped run resumes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from evals.bfcl_data import BfclTask
from evals.bfcl_run import messages_for
from evals.executor_prompts import calls_response_format
from evals.qa_runner import finished_ids

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SynthesisOptions:
    """How many samples per task, how hot, and how long one may take."""

    samples: int = 3
    temperature: float = 0.8
    timeout_s: float = 180.0
    schema: bool = False


def interleaved(tasks: list[BfclTask]) -> list[BfclTask]:
    """The tasks round-robin over their categories, so a run stopped early covers every category."""
    by_category: dict[str, list[BfclTask]] = {}
    for task in tasks:
        by_category.setdefault(task.category, []).append(task)
    rounds = max((len(group) for group in by_category.values()), default=0)
    return [group[i] for i in range(rounds) for group in by_category.values() if i < len(group)]


def sample_id(task_id: str, sample: int) -> str:
    """The record id of one sample of one task."""
    return f"{task_id}#{sample}"


async def _ask(
    model: BaseChatModel, task: BfclTask, temperature: float, timeout_s: float, schema: bool = False
) -> dict[str, Any]:
    constrained = {"response_format": calls_response_format(task.functions, thought=True)} if schema else {}
    bound = model.bind(temperature=temperature, stream=False, **constrained)
    started = time.perf_counter()
    try:
        message = await asyncio.wait_for(bound.ainvoke(messages_for(task, "thought")), timeout_s)
    except TimeoutError:
        return {"reply": "", "failure": f"timeout after {timeout_s:g} s"}
    except Exception as exc:  # noqa: BLE001 - one sample's failure is data, the run goes on
        return {"reply": "", "failure": f"{type(exc).__name__}: {str(exc)[:300]}"}
    content = message.content if isinstance(message.content, str) else json.dumps(message.content)
    return {"reply": content, "failure": None, "latency_ms": round((time.perf_counter() - started) * 1000, 1)}


async def synthesize(
    model: BaseChatModel,
    tasks: list[BfclTask],
    out_path: Path,
    options: SynthesisOptions,
    *,
    teacher: str,
    show_progress: bool = False,
) -> int:
    """Write the samples not yet in ``out_path``; returns how many were written now."""
    from tqdm import tqdm

    done = finished_ids(out_path)
    todo = [
        (t, s) for s in range(options.samples) for t in interleaved(tasks) if sample_id(t.id, s) not in done
    ]
    log.info("%d samples wanted, %d already written", len(tasks) * options.samples, len(done))
    bar = tqdm(total=len(todo), desc="synthesize", unit="sample", file=sys.stderr, disable=not show_progress)
    for task, sample in todo:
        temperature = 0.0 if sample == 0 else options.temperature
        answer = await _ask(model, task, temperature, options.timeout_s, options.schema)
        record = {
            "id": sample_id(task.id, sample),
            "task_id": task.id,
            "category": task.category,
            "sample": sample,
            "teacher": teacher,
            "temperature": temperature,
            **answer,
        }
        with open(out_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        bar.update(1)
    bar.close()
    return len(todo)
