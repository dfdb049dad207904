"""The distilled executor's decline threshold, chosen on a tuning split and kept in its manifest.

A student's decision to call nothing is measured apart from its bias (``evals/decline_margin.py``):
its own log-odds of declining at the token that decides ranks BFCL's irrelevance tasks well above
the rest, while where it cuts by default moves with each training mix. ``aisearch distill
calibrate`` runs the exported student on a tuning split (dev by default; never test) with the
margins recorded, takes the threshold that would have served that run best, and writes it into the
export's manifest (``<file>.json``, key :data:`CALIBRATION`) beside the sha256 of the file it was
chosen for. ``aisearch eval executor --schema`` then measures ``distilled_calibrated``: the same
student with the margin deciding. A new export writes a new manifest, so a threshold never outlives
the weights it was chosen for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.config_files import validation_line, write_json_atomically
from models.distilled import manifest_path

CALIBRATION = "calibration"
TUNING_SPLITS = ("train", "dev")  # the test split never chooses anything


class CalibrationError(ValueError):
    """A manifest's calibration that cannot be used (malformed, or chosen for other weights)."""


class Calibration(BaseModel):
    """The decline threshold chosen for one exported file, and what it was chosen on."""

    model_config = ConfigDict(extra="ignore")

    decline_threshold: float = Field(allow_inf_nan=False)
    sha256: str = Field(min_length=64, max_length=64)  # of the exported file the margins came from
    split: str
    n: int = Field(ge=1)  # tasks with a margin
    auc: float | None = None  # how well the margins rank irrelevance above the rest
    greedy_accuracy: float  # the run's BFCL accuracy with the greedy token deciding
    threshold_accuracy: float | None = None  # its estimate with the threshold deciding (compares snapshots)
    run: str  # the calibration run's folder (records, summary, report)
    date: str


def _manifest(gguf: Path) -> dict[str, Any]:
    path = manifest_path(gguf)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationError(f"{path} is missing: run `aisearch distill export` first") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"{path} is not readable JSON ({exc}); export again") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("sha256"), str):
        raise CalibrationError(f"{path} names no sha256; export again")
    return manifest


def exported_sha256(gguf: Path) -> str:
    """The sha256 the export's manifest records for the file."""
    return str(_manifest(gguf)["sha256"])


def calibration_from(summary: dict[str, Any], *, sha256: str, run: Path) -> Calibration:
    """The calibration a margins run's summary supports (``evals.bfcl_report.summarise``).

    Raises:
        CalibrationError: when the run has no threshold (no margins, or only one side of them).
    """
    margins = summary.get("decline_margins") or {}
    threshold = margins.get("best_threshold")
    if threshold is None:
        raise CalibrationError(
            f"the run in {run} gives no threshold: it needs decline margins of irrelevance tasks and of "
            "tasks that want a call"
        )
    return Calibration(
        decline_threshold=float(threshold),
        sha256=sha256,
        split=str(summary.get("config", {}).get("split", "")),
        n=int(margins.get("n", 0)),
        auc=margins.get("auc"),
        greedy_accuracy=float(summary["accuracy"]),
        threshold_accuracy=margins.get("best_threshold_accuracy"),
        run=str(run),
        date=str(summary.get("config", {}).get("date", "")),
    )


def write_calibration(gguf: Path, calibration: Calibration) -> dict[str, Any]:
    """Store ``calibration`` in the export's manifest (atomically) and return the manifest.

    Raises:
        CalibrationError: when the manifest is unusable or records another file than the one calibrated.
    """
    manifest = _manifest(gguf)
    if manifest["sha256"] != calibration.sha256:
        raise CalibrationError(
            f"{manifest_path(gguf)} records another file (sha256 {manifest['sha256'][:12]}…) than the one "
            f"calibrated ({calibration.sha256[:12]}…): calibrate the current export again"
        )
    manifest[CALIBRATION] = calibration.model_dump()
    write_json_atomically(manifest_path(gguf), manifest)
    return manifest


def read_calibration(gguf: Path) -> Calibration | None:
    """The calibration stored for the exported file; None when it has none.

    Raises:
        CalibrationError: when the stored calibration is malformed or was chosen for other weights.
    """
    manifest = _manifest(gguf)
    stored = manifest.get(CALIBRATION)
    if stored is None:
        return None
    try:
        calibration = Calibration.model_validate(stored)
    except ValidationError as exc:
        raise CalibrationError(
            f"{manifest_path(gguf)}: malformed {CALIBRATION} ({validation_line(exc, CALIBRATION)}); run "
            "`aisearch distill calibrate`"
        ) from None
    if calibration.sha256 != manifest["sha256"]:
        raise CalibrationError(
            f"{manifest_path(gguf)}: the {CALIBRATION} was chosen for another file; run `aisearch distill "
            "calibrate` again"
        )
    return calibration


async def calibrate(
    gguf: Path,
    model: Any,
    tasks: list[Any],
    scorer: Any,
    options: Any,
    *,
    show_progress: bool = False,
) -> Calibration:
    """Run the exported student on ``tasks`` with margins (``options``: a schema-mode
    :class:`evals.bfcl_run.BfclOptions` with ``margins`` and a ``run_dir``), choose the threshold
    and store it in the manifest. A stopped run resumes; a run of another export is refused.

    Raises:
        CalibrationError: on a test split, a run folder of another export, or a run with no threshold.
    """
    from evals.bfcl_run import run_bfcl

    if options.split not in TUNING_SPLITS:
        raise CalibrationError(f"calibrate on {' or '.join(TUNING_SPLITS)}, never on {options.split!r}")
    sha256 = exported_sha256(gguf)
    run_dir = Path(options.run_dir)
    config_path = run_dir / "config.json"
    if config_path.is_file():
        earlier = json.loads(config_path.read_text(encoding="utf-8")).get("extra", {}).get("sha256")
        if earlier not in (None, sha256):
            raise CalibrationError(
                f"{run_dir} holds the margins of another export (sha256 {str(earlier)[:12]}…); add --fresh"
            )
    options.extra = {**options.extra, "sha256": sha256}
    summary = await run_bfcl(options, model, tasks, scorer, show_progress=show_progress)
    calibration = calibration_from(summary, sha256=sha256, run=run_dir)
    write_calibration(gguf, calibration)
    return calibration
