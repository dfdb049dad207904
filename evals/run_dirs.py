"""Where evaluations and benchmarks write: ``results/`` at the top of the repository, outside every
package.

Every run command writes its folder (or its ``bench-<name>-<date>`` files) there unless given a path;
the published runs are committed there, and a run's large records (``questions.jsonl``,
``cqed.jsonl``, ``bfcl.jsonl``: they quote the corpora) are kept out of git by ``.gitignore``.
"""

from __future__ import annotations

from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"


def named_run_dir(run: str) -> Path:
    """``run`` as a path when it holds a ``/``, else the run of that name under :data:`RESULTS_DIR`."""
    return Path(run).expanduser() if "/" in run else RESULTS_DIR / run
