"""The distilled executor's GGUF file (``aisearch distill export``) and how a role finds it.

When the file exists, the executor role's default model is its alias (a model named in the config
file or the environment still wins), and the local server maps the alias to the file.
"""

from __future__ import annotations

from pathlib import Path

from models.assemble import cache_dir
from models.env_settings import directories

DISTILLED_ALIAS = "qwen2.5-coder-0.5b-distilled"
DISTILLED_FILE = "qwen2.5-coder-0.5b-distilled.gguf"


def distill_dir() -> Path:
    """The distillation pipeline's folder: ``$AISEARCH_DISTILL_DIR`` or ``<cache>/distill``."""
    return (directories().distill_dir or cache_dir() / "distill").expanduser()


def distilled_gguf() -> Path:
    """Where ``aisearch distill export`` writes the distilled executor."""
    return distill_dir() / "export" / DISTILLED_FILE


def manifest_path(gguf: Path) -> Path:
    """The manifest ``aisearch distill export`` writes beside an exported file (``<file>.json``)."""
    return gguf.with_name(gguf.name + ".json")


def distilled_available() -> bool:
    """Whether an exported distilled executor (with its manifest) is present."""
    path = distilled_gguf()
    return path.is_file() and manifest_path(path).is_file()
