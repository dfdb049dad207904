"""``aisearch eval executor``: the four executors on the same BFCL tasks, in one JSON object.

Executors (each measured by :func:`evals.bfcl_run.run_bfcl`, one step per task):

* ``base``: the stock 0.5B executor, in BFCL's prompting mode;
* ``teacher``: the 1.5B model that writes the training trajectories, in BFCL's prompting mode;
* ``distilled``: the exported distilled 0.5B (:mod:`models.distilled`), with a thought first;
* ``distilled_nothought``: the same model asked for the calls only (TURA's inference mode).

With ``schema``, three more: ``base_schema``, ``teacher_schema`` and ``distilled_schema``, each
asked for the calls only with its reply constrained by a JSON schema of the task's functions (how
the graph's executor asks, ``evals/executor_prompts.py``); and ``distilled_calibrated``, the same
student with its decline margin deciding against the threshold ``aisearch distill calibrate`` chose
on a tuning split (``distill/calibrate.py``).

An executor that is not available (no exported distilled file, no calibration) gets ``null`` for
every key. Each executor's run lives in its own folder (the calibrated one's named by its threshold)
and resumes. The contract (stable, read outside the project):
``n``, ``<executor>_acc`` (BFCL's unweighted mean over categories), ``<executor>_p80_ms`` (per step),
and ``by_category`` with the same keys per category (``n`` there too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.bfcl_data import BfclTask
from evals.bfcl_run import SCHEMA_MODE, BfclOptions, run_bfcl
from evals.bfcl_score import Scorer
from models.config import DEFAULT_MODELS, ModelSettings
from models.distilled import DISTILLED_ALIAS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Executor:
    """One executor: its name in the contract, its model and its prompting mode (``calibrated``: the
    stored decline threshold decides, schema mode only)."""

    name: str
    model: str
    mode: str
    calibrated: bool = False


EXECUTORS: tuple[Executor, ...] = (
    Executor("base", DEFAULT_MODELS["executor"], "prompt"),
    Executor("teacher", DEFAULT_MODELS["writer"], "prompt"),
    Executor("distilled", DISTILLED_ALIAS, "thought"),
    Executor("distilled_nothought", DISTILLED_ALIAS, "nothought"),
)
SCHEMA_EXECUTORS: tuple[Executor, ...] = (
    Executor("base_schema", DEFAULT_MODELS["executor"], SCHEMA_MODE),
    Executor("teacher_schema", DEFAULT_MODELS["writer"], SCHEMA_MODE),
    Executor("distilled_schema", DISTILLED_ALIAS, SCHEMA_MODE),
    Executor("distilled_calibrated", DISTILLED_ALIAS, SCHEMA_MODE, calibrated=True),
)


def executors_for(schema: bool) -> tuple[Executor, ...]:
    """The executors a run measures: the contract's four, and with ``schema`` the three schema ones."""
    return EXECUTORS + SCHEMA_EXECUTORS if schema else EXECUTORS


def contract(
    summaries: dict[str, dict[str, Any] | None],
    tasks: list[BfclTask],
    executors: tuple[Executor, ...] = EXECUTORS,
) -> dict[str, Any]:
    """The JSON contract from each executor's run summary (None or absent: not available)."""
    categories = list(dict.fromkeys(t.category for t in tasks))
    result: dict[str, Any] = {"n": len(tasks)}
    by_category: dict[str, dict[str, Any]] = {
        c: {"n": sum(1 for t in tasks if t.category == c)} for c in categories
    }
    for executor in executors:
        summary = summaries.get(executor.name)
        result[f"{executor.name}_acc"] = summary["accuracy"] if summary else None
        result[f"{executor.name}_p80_ms"] = summary["p80_ms"] if summary else None
        for category in categories:
            block = (summary or {}).get("by_category", {}).get(category) if summary else None
            by_category[category][f"{executor.name}_acc"] = block["accuracy"] if block else None
            by_category[category][f"{executor.name}_p80_ms"] = block["p80_ms"] if block else None
    result["by_category"] = by_category
    return result


async def evaluate_executors(
    tasks: list[BfclTask],
    scorer: Scorer,
    settings: ModelSettings,
    runs: Path,
    options: BfclOptions,
    available: dict[str, bool],
    *,
    executors: tuple[Executor, ...] = EXECUTORS,
    decline_threshold: float | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Run every available executor on ``tasks`` (one run folder each under ``runs``).

    ``options`` carries what the runs share (categories, split, n, timeout, data, command);
    ``decline_threshold`` is the calibrated executor's (it is not available without one).
    """
    from models.factory import build_chat_model

    summaries: dict[str, dict[str, Any] | None] = {}
    for executor in executors:
        if not available.get(executor.name, True) or (executor.calibrated and decline_threshold is None):
            log.info("%s: not available, skipped", executor.name)
            summaries[executor.name] = None
            continue
        settings.roles["executor"] = settings.role("executor").model_copy(update={"model": executor.model})
        role = settings.role("executor")
        run_options = BfclOptions(
            **{
                **options.__dict__,
                "role": "executor",
                "model": executor.model,
                "base_url": role.base_url,
                "repeat_penalty": role.sent_repeat_penalty,
                "mode": executor.mode,
                "margins": executor.calibrated,
                "decline_threshold": decline_threshold if executor.calibrated else None,
                "run_dir": runs
                / (f"{executor.name}{decline_threshold:+g}" if executor.calibrated else executor.name),
            }
        )
        model = build_chat_model("executor", settings)
        log.info("%s: %s in %s mode", executor.name, executor.model, executor.mode)
        summaries[executor.name] = await run_bfcl(
            run_options, model, tasks, scorer, show_progress=show_progress
        )
    return contract(summaries, tasks, executors)
