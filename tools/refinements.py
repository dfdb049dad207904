"""DRAFT's refined tool documents on disk (``tools/draft.py`` makes them).

A refinement is stored beside the original it started from (``<tools dir>/refined/<tool>.json``:
the original, every version, the trials and the Δs). The hub shows the refined document while the
tool's own document is still that original (:func:`refined_document`); the original is
never overwritten.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tools.catalog.paths import default_tools_dir

log = logging.getLogger(__name__)


@dataclass
class Refinement:
    """One tool's refinement: the original, each version, the trials and when it stopped."""

    tool: str
    original: str
    original_hash: str
    versions: list[str] = field(default_factory=list)
    trials: list[dict[str, Any]] = field(default_factory=list)
    deltas: list[float] = field(default_factory=list)
    rejected: int = 0
    stop: str = ""

    @property
    def refined(self) -> str:
        """The last version (the original when no round finished)."""
        return self.versions[-1] if self.versions else self.original

    def diff(self) -> str:
        """A unified diff from the original to the refined document."""
        lines = difflib.unified_diff(
            self.original.splitlines(), self.refined.splitlines(), "original", "refined", lineterm=""
        )
        return "\n".join(lines)


def description_hash(text: str) -> str:
    """The hash that ties a refinement to the original document it started from."""
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def refined_dir(root: Path | None = None) -> Path:
    """Where refined documents are stored."""
    return (root or default_tools_dir()) / "refined"


def refined_path(tool: str, root: Path | None = None) -> Path:
    """The file of ``tool``'s refinement."""
    return refined_dir(root) / f"{tool}.json"


def save_refinement(refinement: Refinement, root: Path | None = None) -> Path:
    """Store ``refinement`` (the original inside it); returns its path."""
    path = refined_path(refinement.tool, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(refinement), indent=2, ensure_ascii=False))
    return path


def load_refinement(tool: str, root: Path | None = None) -> Refinement | None:
    """The stored refinement of ``tool``, or None."""
    path = refined_path(tool, root)
    if not path.exists():
        return None
    try:
        return Refinement(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as exc:
        log.warning("ignoring the unreadable refinement %s: %s", path, exc)
        return None


def refinement_of(tool: str, description: str, root: Path | None = None) -> Refinement | None:
    """The stored refinement of ``tool`` made from ``description`` (the tool's current original),
    or None: none is stored, or the stored one started from another original."""
    refinement = load_refinement(tool, root)
    if refinement is None or refinement.original_hash != description_hash(description):
        return None
    return refinement


def refined_document(tool: str, description: str, root: Path | None = None) -> str:
    """The document to show for ``tool``: its refinement when one was made from ``description``
    (the tool's current original), else ``description``."""
    refinement = refinement_of(tool, description, root)
    return description if refinement is None else refinement.refined


def original_document(tool: str, description: str, root: Path | None = None) -> str:
    """The original of a document the hub shows refined (``description`` itself otherwise)."""
    refinement = load_refinement(tool, root)
    if refinement is None or refinement.refined != description:
        return description
    return refinement.original
