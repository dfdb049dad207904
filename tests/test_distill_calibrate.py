"""The distilled executor's decline threshold: chosen on a tuning split, kept in the export's manifest."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from distill.calibrate import (
    CALIBRATION,
    CalibrationError,
    calibrate,
    manifest_path,
    read_calibration,
    write_calibration,
)
from evals.bfcl_data import load_tasks
from evals.bfcl_run import BfclOptions
from evals.bfcl_score import Scorer
from tests.support.bfcl import FIXTURE_DATA, bfcl_root  # noqa: F401 - a fixture
from tests.test_decline_margin import LogprobModel

SHA = "ab" * 32
CALL = json.dumps(
    {"tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}]}
)
NONE = json.dumps({"tool_calls": []})


def exported(tmp_path: Path, sha: str = SHA) -> Path:
    """An exported file and its manifest, as ``aisearch distill export`` leaves them."""
    gguf = tmp_path / "export" / "student.gguf"
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF")
    manifest_path(gguf).write_text(json.dumps({"file": str(gguf), "sha256": sha, "scale": 1.0}))
    return gguf


def student() -> LogprobModel:
    """Calls every task, the irrelevant ones with less conviction (margins -1.7 and -0.5 against -2.9
    and -3.95 for the tasks that want a call): a student that ranks well and is biased to call."""
    return LogprobModel(
        script=[
            ("triangle", CALL, ' [{"', {' [{"': -0.1, " []": -3.0}),
            ("Hamlet", CALL, ' [{"', {' [{"': -0.2, " []": -1.9}),
            ("x^2", CALL, ' [{"', {' [{"': -0.5, " []": -1.0}),
            ("", CALL, ' [{"', {' [{"': -0.05, " []": -4.0}),
        ],
        seen=[],
    )


def options(tmp_path: Path, split: str = "dev") -> BfclOptions:
    return BfclOptions(
        model="fake",
        base_url="http://fake",
        split=split,
        mode="schema",
        margins=True,
        run_dir=tmp_path / "run",
    )


def test_calibrating_stores_the_threshold_between_the_calls_and_the_irrelevant_margins(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
) -> None:
    gguf = exported(tmp_path)
    tasks = load_tasks(FIXTURE_DATA, ("simple_python", "irrelevance"), "all")
    calibration = asyncio.run(calibrate(gguf, student(), tasks, Scorer(bfcl_root), options(tmp_path)))
    assert -2.9 < calibration.decline_threshold < -1.7  # declines both irrelevant tasks, calls the rest
    assert calibration.greedy_accuracy < 1.0 and calibration.auc == 1.0
    assert calibration.threshold_accuracy is not None
    assert calibration.threshold_accuracy > calibration.greedy_accuracy  # what the threshold wins back
    assert calibration.sha256 == SHA and calibration.split == "dev" and calibration.n == len(tasks)
    manifest = json.loads(manifest_path(gguf).read_text())
    assert (
        manifest["scale"] == 1.0
        and manifest[CALIBRATION]["decline_threshold"] == calibration.decline_threshold
    )
    assert read_calibration(gguf) == calibration
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["extra"]["sha256"] == SHA and config["margins"] is True


def test_the_test_split_and_a_run_of_another_export_are_refused(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
) -> None:
    gguf = exported(tmp_path)
    tasks = load_tasks(FIXTURE_DATA, ("simple_python", "irrelevance"), "all", n=1)
    with pytest.raises(CalibrationError, match="never on 'test'"):
        asyncio.run(calibrate(gguf, student(), tasks, Scorer(bfcl_root), options(tmp_path, "test")))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text(json.dumps({"extra": {"sha256": "cd" * 32}}))
    with pytest.raises(CalibrationError, match="another export"):
        asyncio.run(calibrate(gguf, student(), tasks, Scorer(bfcl_root), options(tmp_path)))
    assert read_calibration(gguf) is None  # nothing was stored


def test_a_run_without_irrelevance_gives_no_threshold_and_stores_nothing(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
) -> None:
    gguf = exported(tmp_path)
    tasks = load_tasks(FIXTURE_DATA, ("simple_python",), "all")
    with pytest.raises(CalibrationError, match="gives no threshold"):
        asyncio.run(calibrate(gguf, student(), tasks, Scorer(bfcl_root), options(tmp_path)))
    assert CALIBRATION not in json.loads(manifest_path(gguf).read_text())


def test_a_stored_calibration_that_is_malformed_or_for_other_weights_is_a_clear_error(tmp_path: Path) -> None:
    gguf = exported(tmp_path)
    manifest = json.loads(manifest_path(gguf).read_text())
    good = {
        "decline_threshold": -3.5,
        "sha256": SHA,
        "split": "dev",
        "n": 250,
        "auc": 0.95,
        "greedy_accuracy": 0.6,
        "run": "r",
        "date": "d",
    }
    manifest_path(gguf).write_text(
        json.dumps({**manifest, CALIBRATION: {**good, "decline_threshold": "high"}})
    )
    with pytest.raises(CalibrationError, match="malformed calibration .*decline_threshold"):
        read_calibration(gguf)
    manifest_path(gguf).write_text(json.dumps({**manifest, "sha256": "cd" * 32, CALIBRATION: good}))
    with pytest.raises(CalibrationError, match="chosen for another file"):
        read_calibration(gguf)
    from distill.calibrate import Calibration

    with pytest.raises(CalibrationError, match="records another file"):
        write_calibration(gguf, Calibration.model_validate(good))
    manifest_path(gguf).write_text("{not json")
    with pytest.raises(CalibrationError, match="not readable JSON"):
        read_calibration(gguf)


def test_eval_executor_measures_the_calibrated_student_with_its_threshold(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evals.executor_eval import SCHEMA_EXECUTORS, evaluate_executors
    from models.config import load_model_settings

    model = student()
    monkeypatch.setattr("models.factory.build_chat_model", lambda role, settings: model)
    tasks = load_tasks(FIXTURE_DATA, ("simple_python", "irrelevance"), "all")
    shared = BfclOptions(
        categories=("simple_python", "irrelevance"), split="test", timeout_s=5.0, command="t"
    )
    calibrated = tuple(e for e in SCHEMA_EXECUTORS if e.name in {"distilled_schema", "distilled_calibrated"})
    result = asyncio.run(
        evaluate_executors(
            tasks,
            Scorer(bfcl_root),
            load_model_settings(env={}),
            tmp_path,
            shared,
            {},
            executors=calibrated,
            decline_threshold=-2.3,
        )
    )
    by_category = result["by_category"]["irrelevance"]
    assert by_category["distilled_schema_acc"] == 0.0  # the greedy token calls every time
    assert by_category["distilled_calibrated_acc"] == 1.0  # the margin above -2.3 declines
    assert result["distilled_calibrated_acc"] > result["distilled_schema_acc"]
    config = json.loads((tmp_path / "distilled_calibrated-2.3" / "config.json").read_text())
    assert config["decline_threshold"] == -2.3 and config["margins"] is True


def test_models_status_names_the_stored_threshold_and_a_broken_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.models_cli import executor_status
    from models.distilled import distilled_gguf

    monkeypatch.setenv("AISEARCH_DISTILL_DIR", str(tmp_path))
    gguf = distilled_gguf()
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF")
    manifest_path(gguf).write_text(json.dumps({"sha256": SHA}))
    assert executor_status()["decline_threshold"] is None
    manifest_path(gguf).write_text(json.dumps({"sha256": SHA, CALIBRATION: {"decline_threshold": 1}}))
    assert "malformed calibration" in str(executor_status()["decline_threshold"])


def test_the_cli_without_an_export_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    monkeypatch.setenv("AISEARCH_DISTILL_DIR", str(tmp_path))
    assert main(["distill", "calibrate", "-q"]) == 2
    err = capsys.readouterr().err
    assert "no exported student" in err and "aisearch distill export" in err and "Traceback" not in err
