"""The distillation's task mix: BFCL's categories and the project's own bundled-tool tasks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.distill_cli import _tasks_of
from distill.curate import curate
from distill.references import reference_calls
from distill.tasks import CONTRAST, bundled_categories, contrast_tasks, default_categories, load_mix
from evals.bfcl_data import BUNDLED_TOOLS_DIR, DEFAULT_CATEGORIES, split_of
from evals.bfcl_fetch import BfclDataError
from evals.bfcl_score import Scorer
from evals.run_records import load_records
from tests.support.bfcl import FIXTURE_DATA, bfcl_root  # noqa: F401 - a fixture

CLOCK = "bundled_multiple_clock"


def trajectory(task_id: str, category: str, calls: list[dict]) -> dict:
    reply = json.dumps({"thought": "t", "tool_calls": calls})
    return {"id": f"{task_id}#0", "task_id": task_id, "category": category, "sample": 0, "reply": reply}


def test_the_default_mix_is_bfcls_five_and_the_bundled_categories() -> None:
    assert CLOCK in bundled_categories() and "bundled_irrelevance" in bundled_categories()
    assert default_categories() == (*DEFAULT_CATEGORIES, *bundled_categories())


def test_each_category_is_read_from_its_own_source_and_split() -> None:
    tasks = load_mix(FIXTURE_DATA, ["simple_python", CLOCK])
    sources = {t.category for t in tasks}
    assert sources == {"simple_python", CLOCK}
    assert all(split_of(t.id) == "train" for t in tasks)
    clock = [t for t in tasks if t.category == CLOCK]
    assert clock and all(f["name"].startswith("clock.") for t in clock for f in t.functions)
    held_out = {t.id for split in ("dev", "test") for t in load_mix(FIXTURE_DATA, [CLOCK], split)}
    assert held_out and not held_out & {t.id for t in clock}  # the bundled set keeps its own held-out part
    with pytest.raises(BfclDataError):
        load_mix(FIXTURE_DATA, ["no_such_category"])


def test_a_right_call_on_a_bundled_task_is_curated(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("evals.bfcl_fetch.data_dir", lambda root: FIXTURE_DATA)
    task = next(t for t in load_mix(FIXTURE_DATA, [CLOCK]) if t.answer)
    (name, params), *_ = task.answer[0].items()
    arguments = {key: values[0] for key, values in params.items() if values and values[0] != ""}
    path = tmp_path / "trajectories.jsonl"
    lines = [
        trajectory(task.id, CLOCK, [{"name": name, "arguments": arguments}]),
        trajectory("simple_python_0", "simple_python", [{"name": "nothing.here", "arguments": {}}]),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    tasks = _tasks_of(bfcl_root, load_records(path), path)
    assert task.id in tasks and "simple_python_0" in tasks
    counts = curate(path, tasks, Scorer(bfcl_root), tmp_path / "curated.jsonl")
    assert counts["trajectories"] == 2 and counts["kept"] == 1
    kept = json.loads((tmp_path / "curated.jsonl").read_text(encoding="utf-8"))
    assert kept["task_id"] == task.id and BUNDLED_TOOLS_DIR.is_dir()


def test_a_contrast_task_asks_a_training_question_with_a_function_that_shares_no_word_with_it() -> None:
    simple = load_mix(FIXTURE_DATA, ["simple_python"], split="all")
    made = contrast_tasks(simple)
    assert made, "the fixture's simple tasks pair up"
    by_id = {task.id: task for task in simple}
    for task in made:
        source = by_id[task.id.removeprefix(f"{CONTRAST}_")]
        assert task.category == CONTRAST and task.relevance_only and task.answer is None
        assert task.messages == source.messages and task.functions != source.functions
        names = " ".join(f["name"] for f in task.functions).lower()
        question = task.messages[-1]["content"].lower()
        assert not {w for w in re.findall(r"[a-z]{3,}", names)} & set(re.findall(r"[a-z]{3,}", question))
    assert [t.id for t in contrast_tasks(list(reversed(simple)))] == [t.id for t in made], "stable"
    assert reference_calls(made[0]) == [], "a contrast task's reference declines"


def test_contrast_tasks_come_only_from_the_split_asked_for() -> None:
    simple = load_mix(FIXTURE_DATA, ["simple_python"], split="all")
    split_by_functions = {json.dumps(t.functions): split_of(t.id) for t in simple}
    made = {split: load_mix(FIXTURE_DATA, [CONTRAST], split=split) for split in ("train", "dev", "test")}
    assert sum(map(len, made.values())) > 0
    for split, tasks in made.items():
        for task in tasks:
            assert split_of(task.id.removeprefix(f"{CONTRAST}_")) == split
            assert split_by_functions[json.dumps(task.functions)] == split, "a partner from the same split"


def test_the_train_commands_defaults_are_the_run_options_defaults() -> None:
    from dataclasses import fields

    from app.cli import build_parser
    from distill.train import TrainOptions

    args = vars(build_parser().parse_args(["distill", "train"]))
    default = TrainOptions()
    given = [f.name for f in fields(TrainOptions) if f.name in args]
    assert {"layers", "rank", "max_steps", "max_minutes", "schedule", "keep_every"} <= set(given)
    assert {name: args[name] for name in given} == {name: getattr(default, name) for name in given}
