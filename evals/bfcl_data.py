"""BFCL's single-turn tasks: read from the data folder, split by id into train / dev / test.

A category's questions are ``<data>/BFCL_v4_<category>.json`` (one JSON object a line: ``id``,
``question`` as a list of turns of chat messages, ``function`` as BFCL function docs) and its
possible answers ``<data>/possible_answer/BFCL_v4_<category>.json`` (``id``, ``ground_truth``).
Relevance categories (``irrelevance``, ``live_irrelevance``, ``live_relevance``) have no answers:
only whether the model calls a function counts.

The split is fixed by a salted sha256 of each task's id (ids name their category, so every
category is split on its own): 60 % train, 20 % dev, 20 % test. The test part is never used to
train, select checkpoints or tune prompts.

:func:`with_refined_documents` shows the functions' DRAFT-refined documents instead of their own
(``aisearch eval bfcl --tool-docs refined``): a function named like a refined tool
(``python.calculate``) whose description is the original the refinement started from.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from evals.bfcl_fetch import BfclDataError
from evals.data_files import id_bucket, json_lines
from tools.refinements import description_hash, refined_path, refinement_of

log = logging.getLogger(__name__)

Split = Literal["train", "dev", "test"]
SPLITS: tuple[str, ...] = ("train", "dev", "test", "all")
SPLIT_SALT = "aisearch-bfcl-split:v1:"
TRAIN_SHARE, DEV_SHARE = 6, 2  # out of 10; the rest (2) is test

DEFAULT_CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
)
NOT_SINGLE_TURN = ("multi_turn", "memory", "web_search", "format_sensitivity")
FILE_PREFIX = "BFCL_v4_"
BUNDLED_TOOLS_DIR = Path(__file__).resolve().parent / "data" / "bundled_tools"  # evals/bundled_tools.py
TOOL_DOCS: tuple[str, ...] = ("original", "refined")


@dataclass(frozen=True)
class BfclTask:
    """One single-turn BFCL task."""

    id: str
    category: str
    messages: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    answer: list[dict[str, Any]] | None = field(default=None)

    @property
    def relevance_only(self) -> bool:
        """Scored on whether a call was made at all (the (ir)relevance categories)."""
        return is_relevance(self.category)


def is_relevance(category: str) -> bool:
    """Whether a category is scored by call or no call (``irrelevance``, ``live_relevance``, ...)."""
    return "relevance" in category


def wants_call(category: str) -> bool:
    """For a relevance category: whether the right answer is a call (relevance) or none (irrelevance)."""
    return "irrelevance" not in category


def split_of(task_id: str) -> Split:
    """The part a task belongs to, fixed by its id."""
    bucket = id_bucket(SPLIT_SALT, task_id, 10)
    if bucket < TRAIN_SHARE:
        return "train"
    return "dev" if bucket < TRAIN_SHARE + DEV_SHARE else "test"


def available_categories(data: Path) -> list[str]:
    """The single-turn categories whose question file is in ``data``."""
    names = sorted(p.name[len(FILE_PREFIX) : -len(".json")] for p in data.glob(f"{FILE_PREFIX}*.json"))
    return [name for name in names if not name.startswith(NOT_SINGLE_TURN)]


def _read_lines(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, row in json_lines(path, BfclDataError):
        if not isinstance(row, dict) or "id" not in row:
            raise BfclDataError(f"{path}:{number}: each line needs an object with an 'id'")
        rows.append(row)
    return rows


def load_category(data: Path, category: str) -> list[BfclTask]:
    """Every task of one category, in file order.

    Raises:
        BfclDataError: On a category that is not single-turn or not in ``data``, or malformed files.
    """
    if category.startswith(NOT_SINGLE_TURN):
        raise BfclDataError(
            f"category {category!r} is not single-turn; choose from {available_categories(data)}"
        )
    path = data / f"{FILE_PREFIX}{category}.json"
    if not path.is_file():
        raise BfclDataError(
            f"no BFCL category {category!r} in {data}; choose from {available_categories(data)}"
        )
    answers: dict[str, list[dict[str, Any]]] = {}
    if not is_relevance(category):
        answer_path = data / "possible_answer" / path.name
        if not answer_path.is_file():
            raise BfclDataError(f"no possible answers for {category!r} at {answer_path}")
        answers = {str(row["id"]): row["ground_truth"] for row in _read_lines(answer_path)}
    tasks = []
    for row in _read_lines(path):
        task_id = str(row["id"])
        turns = row.get("question") or [[]]
        if not is_relevance(category) and task_id not in answers:
            raise BfclDataError(f"{path}: task {task_id} has no possible answer")
        tasks.append(
            BfclTask(
                id=task_id,
                category=category,
                messages=list(turns[0]),  # single-turn: the first (only) turn
                functions=list(row.get("function") or []),
                answer=answers.get(task_id),
            )
        )
    return tasks


def load_tasks(
    data: Path, categories: tuple[str, ...] = DEFAULT_CATEGORIES, split: str = "all", n: int | None = None
) -> list[BfclTask]:
    """The tasks of ``categories`` in ``split``, the first ``n`` of each category (file order).

    Raises:
        BfclDataError: On an unknown split or category, or malformed files.
    """
    if split not in SPLITS:
        raise BfclDataError(f"unknown split {split!r} (choose from {', '.join(SPLITS)})")
    selected: list[BfclTask] = []
    for category in categories:
        tasks = [t for t in load_category(data, category) if split == "all" or split_of(t.id) == split]
        selected += tasks[:n] if n is not None else tasks
    log.info("%d BFCL tasks (%s, split %s, n %s)", len(selected), ",".join(categories), split, n)
    return selected


@dataclass(frozen=True)
class RefinedDocuments:
    """Which functions were shown a refined document, and which refinements were left out."""

    refined: dict[str, str]  # function name -> hash of the refined document shown
    stale: list[str]  # functions whose stored refinement started from another original


def with_refined_documents(
    tasks: list[BfclTask], root: Path | None = None
) -> tuple[list[BfclTask], RefinedDocuments]:
    """``tasks`` with each function's description replaced by the document DRAFT refined from it.

    Only a refinement made from that very description counts, as in the hub
    (``tools/refinements.py``; ``root``: the tools directory, default the user's); one made from
    another original is reported as stale and not shown.
    """
    shown: dict[tuple[str, str], str] = {}
    refined: dict[str, str] = {}
    stale: set[str] = set()
    out = []
    for task in tasks:
        functions = []
        for function in task.functions:
            name, description = str(function.get("name", "")), str(function.get("description", ""))
            key = (name, description)
            if key not in shown:
                refinement = refinement_of(name, description, root)
                shown[key] = description if refinement is None else refinement.refined
                if refinement is not None:
                    refined[name] = description_hash(refinement.refined)
                elif refined_path(name, root).is_file():
                    stale.add(name)
            functions.append({**function, "description": shown[key]})
        out.append(replace(task, functions=functions))
    if stale:
        log.warning("refinements of another original, not shown: %s", ", ".join(sorted(stale)))
    log.info("refined documents shown for %d functions: %s", len(refined), ", ".join(sorted(refined)))
    return out, RefinedDocuments(dict(sorted(refined.items())), sorted(stale))
