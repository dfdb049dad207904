"""The files of the distillation pipeline, under :func:`models.distilled.distill_dir` (never in git)."""

from __future__ import annotations

from pathlib import Path

from models.distilled import distill_dir as _root
from models.distilled import distilled_gguf

__all__ = ["CURATED", "CURATION_REPORT", "TRAJECTORIES", "TRAIN_DIR", "distill_dir", "distilled_gguf"]

TRAJECTORIES = "trajectories.jsonl"
CURATED = "curated.jsonl"
CURATION_REPORT = "curation.json"
TRAIN_DIR = "train"


def distill_dir() -> Path:
    """The pipeline's working folder (created on first use)."""
    root = _root()
    root.mkdir(parents=True, exist_ok=True)
    return root
