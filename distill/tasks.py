"""The distillation's tasks: BFCL's single-turn categories and the project's own tool tasks.

The training mix is BFCL's five categories (``evals.bfcl_data.DEFAULT_CATEGORIES``) and the
bundled-tool task set (``evals/data/bundled_tools``: requests over the bundled MCP servers' real tool
specs, ``evals/bundled_tools.py``). Both are split by the same id hash, so each keeps a dev and test
part the student never trains on. A category is read from the bundled set when that set has it,
else from BFCL's data.

:data:`CONTRAST` is a category made here: each simple_python question paired with another task's
function that shares no word with it, to be declined. BFCL's irrelevance questions never come
with a function that fits them, so a student can learn to decline by how a question reads; the
same question with and without a fitting function is meant to make it look at the function (the
irrelevance augmentation of Hammer, Lin et al. 2024). Measured once, at 78 such tasks and 0.42 of
a pass, it made the 0.5B decline nearly everything (docs/results.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from evals.bfcl_data import BUNDLED_TOOLS_DIR, DEFAULT_CATEGORIES, BfclTask, available_categories, load_tasks
from evals.data_files import id_rank

CONTRAST = "contrast_irrelevance"
CONTRAST_SOURCE = "simple_python"
WORD = re.compile(r"[a-z]{3,}")


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
        if category == CONTRAST:
            tasks += contrast_tasks(load_tasks(bfcl_data, (CONTRAST_SOURCE,), split, None))[:n]
            continue
        source = BUNDLED_TOOLS_DIR if category in bundled else bfcl_data
        tasks += load_tasks(source, (category,), split, n)
    return tasks


def contrast_tasks(tasks: list[BfclTask]) -> list[BfclTask]:
    """Each task's question with the functions of the next task (in id-hash order) whose function
    names share no word with the question, to be declined; a task with no such partner is left out.
    Only ``tasks``' own functions are used, so a split's contrast tasks stay inside that split."""
    ordered = sorted(tasks, key=lambda task: id_rank(task.id))
    made = []
    for index, task in enumerate(ordered):
        asked = set(WORD.findall(_question(task).lower()))
        others = ordered[index + 1 :] + ordered[:index]
        partner = next((other for other in others if not _name_words(other) & asked), None)
        if partner is not None:
            made.append(BfclTask(f"{CONTRAST}_{task.id}", CONTRAST, task.messages, partner.functions))
    return made


def _question(task: BfclTask) -> str:
    return " ".join(str(m.get("content", "")) for m in task.messages if m.get("role") == "user")


def _name_words(task: BfclTask) -> set[str]:
    """The words of a task's function names (``geometry.circumference`` → geometry, circumference)."""
    return {
        word for function in task.functions for word in WORD.findall(str(function.get("name", "")).lower())
    }
