"""Where evaluations and benchmarks write: ``results/`` at the top of the repository, outside every
package.

Every run command writes its folder (or its ``bench-<name>-<date>`` files) there unless given a path;
the published runs are committed there, and a run's large records (``questions.jsonl``,
``cqed.jsonl``, ``bfcl.jsonl``: they quote the corpora) are kept out of git by ``.gitignore``. A run
names the code it measured (:func:`code_version`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "results"


def code_version(repo: Path = REPO) -> dict[str, str | bool | None]:
    """The commit the code is checked out at (``None`` outside a git checkout) and whether tracked
    files differ from it."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=repo, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "--short=7", "HEAD")
    changes = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if changes is None else bool(changes)}


def named_run_dir(run: str) -> Path:
    """``run`` as a path when it holds a ``/``, else the run of that name under :data:`RESULTS_DIR`."""
    return Path(run).expanduser() if "/" in run else RESULTS_DIR / run
