"""The distillation's tasks: BFCL's single-turn categories and the project's own tool tasks.

The training mix is BFCL's five categories (``evals.bfcl_data.DEFAULT_CATEGORIES``) and the
bundled-tool task set (``evals/data/bundled_tools``: requests over the bundled MCP servers' real tool
specs, ``evals/bundled_tools.py``). Both are split by the same id hash, so each keeps a dev and test
part the student never trains on. A category is read from the bundled set when that set has it,
else from BFCL's data.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from evals.bfcl_data import BUNDLED_TOOLS_DIR, DEFAULT_CATEGORIES, BfclTask, available_categories, load_tasks


def bundled_categories() -> tuple[str, ...]:
    """The categories of the bundled-tool task set."""
    return tuple(available_categories(BUNDLED_TOOLS_DIR))


def default_categories() -> tuple[str, ...]:
    """The training mix by default: BFCL's five categories and the bundled-tool ones."""
    return (*DEFAULT_CATEGORIES, *bundled_categories())


def load_mix(
    bfcl_data: Path, categories: Iterable[str] | None = None, split: str = "train", n: int | None = None
) -> list[BfclTask]:
    """The tasks of ``categories`` (default :func:`default_categories`) in ``split``, the first
    ``n`` of each, each category from its own source.

    Raises:
        BfclDataError: On an unknown split or category, or malformed files.
    """
    bundled = bundled_categories()
    tasks: list[BfclTask] = []
    for category in dict.fromkeys(categories or default_categories()):
        source = BUNDLED_TOOLS_DIR if category in bundled else bfcl_data
        tasks += load_tasks(source, (category,), split, n)
    return tasks
