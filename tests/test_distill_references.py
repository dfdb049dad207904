"""Reference trajectories: the training task's own reference call where the teacher missed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from app.distill_cli import parse_category_counts
from distill.curate import curate
from distill.examples import examples_for
from distill.references import reference_calls
from evals.bfcl_data import BfclTask, load_category
from evals.bfcl_score import Scorer
from tests.support.bfcl import FIXTURE_DATA, bfcl_root  # noqa: F401 - a fixture

AREA = load_category(FIXTURE_DATA, "simple_python")[0]  # geometry.triangle_area(base=10, height=5)
PARALLEL = load_category(FIXTURE_DATA, "parallel")[0]  # get_weather for Rome and Madrid
IRRELEVANT = load_category(FIXTURE_DATA, "irrelevance")[0]
AREA_CALL = {"geometry.triangle_area": {"base": 10, "height": 5}}


def test_a_reference_fills_every_argument_with_its_first_listed_value() -> None:
    assert reference_calls(AREA) == [
        {"geometry.triangle_area": {"base": 10, "height": 5, "unit": "units"}}
    ], "unit may be left out, but a student taught to leave it out leaves out the ones asked for"
    assert reference_calls(PARALLEL) == [
        {"get_weather": {"city": "Rome", "days": 1}},
        {"get_weather": {"city": "Madrid", "days": 1}},
    ]
    assert reference_calls(IRRELEVANT) == []


def test_only_an_argument_with_nothing_but_the_omission_mark_is_left_out() -> None:
    answer = [
        {
            "league.top": {
                "league": ["", "EPL"],
                "filters": [{"season": [2020, 2021], "note": [""]}],
                "x": [""],
            }
        }
    ]
    task = BfclTask("simple_python_x", "simple_python", [], [], answer)
    assert reference_calls(task) == [{"league.top": {"league": "EPL", "filters": {"season": 2020}}}]


def test_a_relevance_task_has_no_reference() -> None:
    assert reference_calls(BfclTask("live_relevance_1", "live_relevance", [], [], None)) is None


def test_curation_fills_the_tasks_the_teacher_missed_with_their_references(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
) -> None:
    right = json.dumps(
        {
            "thought": "t",
            "tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}],
        }
    )
    wrong = json.dumps(
        {"thought": "t", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}
    )
    path = tmp_path / "trajectories.jsonl"
    rows = [(AREA.id, right), (PARALLEL.id, wrong), (IRRELEVANT.id, wrong)]
    path.write_text("".join(json.dumps({"task_id": t, "reply": r, "sample": 0}) + "\n" for t, r in rows))
    tasks = {t.id: t for t in (AREA, PARALLEL, IRRELEVANT)}
    out = tmp_path / "curated.jsonl"

    assert "reference_trajectories" not in curate(path, tasks, Scorer(bfcl_root), out)
    assert [json.loads(line)["task_id"] for line in out.read_text().splitlines()] == [AREA.id]

    counts = curate(path, tasks, Scorer(bfcl_root), out, references=True)
    kept = {row["task_id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert counts["kept"] == 1 and counts["reference_trajectories"] == 2
    assert kept[AREA.id]["source"] == "teacher"
    assert kept[PARALLEL.id] == {
        "task_id": PARALLEL.id,
        "category": "parallel",
        "thought": None,
        "calls": [
            {"get_weather": {"city": "Rome", "days": 1}},
            {"get_weather": {"city": "Madrid", "days": 1}},
        ],
        "source": "reference",
    }
    assert kept[IRRELEVANT.id]["calls"] == []


def test_a_reference_trajectory_trains_the_no_thought_mode_only() -> None:
    item = {"thought": None, "calls": [AREA_CALL], "source": "reference"}
    (example,) = examples_for(item, AREA)
    assert example.mode == "nothought"
    assert json.loads(example.target) == {
        "tool_calls": [{"name": "geometry.triangle_area", "arguments": AREA_CALL["geometry.triangle_area"]}]
    }


def test_references_need_no_synthesis(
    bfcl_root: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    tasks = {t.id: t for t in (AREA, PARALLEL, IRRELEVANT)}
    out = tmp_path / "curated.jsonl"
    missing = tmp_path / "trajectories.jsonl"

    with pytest.raises(FileNotFoundError, match="synthesize"):
        curate(missing, tasks, Scorer(bfcl_root), out)

    counts = curate(missing, tasks, Scorer(bfcl_root), out, references=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert counts["kept"] == 0 and counts["reference_trajectories"] == 3
    assert {row["task_id"] for row in rows} == set(tasks)
    assert {row["source"] for row in rows} == {"reference"}


def test_a_reference_limit_caps_a_category_the_same_way_on_every_rerun(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
) -> None:
    declines = [dataclasses.replace(IRRELEVANT, id=f"irrelevance_{i}") for i in range(6)]
    tasks = {t.id: t for t in (AREA, PARALLEL, *declines)}
    missing, out = tmp_path / "trajectories.jsonl", tmp_path / "curated.jsonl"

    counts = curate(missing, tasks, Scorer(bfcl_root), out, references=True)
    assert counts["targets"] == {"single": 1, "parallel": 1, "decline": 6}

    limited = curate(
        missing, tasks, Scorer(bfcl_root), out, references=True, reference_limits={"irrelevance": 2}
    )
    first = [json.loads(line)["task_id"] for line in out.read_text().splitlines()]
    assert limited["reference_trajectories"] == 4
    assert limited["reference_trajectories_left_out"] == {"irrelevance": 4}
    assert limited["targets"] == {"single": 1, "parallel": 1, "decline": 2}
    assert {AREA.id, PARALLEL.id} <= set(first), "an unlimited category keeps all its references"

    curate(missing, tasks, Scorer(bfcl_root), out, references=True, reference_limits={"irrelevance": 2})
    assert [json.loads(line)["task_id"] for line in out.read_text().splitlines()] == first


def test_a_reference_limit_option_names_a_training_category_and_a_count() -> None:
    categories = {"irrelevance", "simple_python"}
    limits = parse_category_counts("--reference-limit", ["irrelevance=78", "simple_python=0"], categories)
    assert limits == {"irrelevance": 78, "simple_python": 0}
    assert parse_category_counts("--reference-limit", None, categories) == {}
    with pytest.raises(ValueError, match="--reference-limit takes CATEGORY=N with N a whole number ≥ 0"):
        parse_category_counts("--reference-limit", ["irrelevance=-1"], categories)
    with pytest.raises(ValueError, match="no training category 'irelevance'"):
        parse_category_counts("--reference-limit", ["irelevance=3"], categories)
    with pytest.raises(
        ValueError, match="--reference-repeat takes CATEGORY=N with N a whole number from 1 to 20"
    ):
        parse_category_counts("--reference-repeat", ["irrelevance=0"], categories, least=1, most=20)
    with pytest.raises(ValueError, match="from 1 to 20, not 'irrelevance=100000000'"):
        parse_category_counts("--reference-repeat", ["irrelevance=100000000"], categories, least=1, most=20)


def test_a_reference_repeat_writes_a_category_s_references_that_many_times(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
) -> None:
    tasks = {t.id: t for t in (AREA, PARALLEL, IRRELEVANT)}
    missing, out = tmp_path / "trajectories.jsonl", tmp_path / "curated.jsonl"

    counts = curate(
        missing, tasks, Scorer(bfcl_root), out, references=True, reference_repeats={"parallel": 3}
    )

    rows = [json.loads(line)["task_id"] for line in out.read_text().splitlines()]
    assert rows.count(PARALLEL.id) == 3 and rows.count(AREA.id) == 1 and rows.count(IRRELEVANT.id) == 1
    assert counts["targets"] == {"single": 1, "parallel": 3, "decline": 1}
    assert counts["reference_repeats"] == {"parallel": 3}
