"""The whole distillation pipeline end to end on a tiny budget, with the REAL local models.

Marked ``local_model``. The run uses a temporary cache (its own server, state and distill folder;
the assembled GGUFs and BFCL's data are linked in from the normal cache), the 1.5B teacher on
two training tasks, two LoRA steps on the last layer, an export in the base file's Q4_K_M, its
decline threshold calibrated on one dev task per category, and the executor evaluation on one test
task with the exported model hosted by the local server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    import llama_cpp  # noqa: F401
except Exception as exc:  # noqa: BLE001 - any import failure means: cannot run these
    LLAMA_CPP_ERROR: str | None = f"llama-cpp-python is not importable ({exc}); run scripts/bootstrap.sh"
else:
    LLAMA_CPP_ERROR = None

from app.cli import main
from app.models_cli import executor_status
from evals.bfcl_fetch import bfcl_dir
from models.assemble import model_path
from models.distilled import DISTILLED_ALIAS
from models.llama_server import default_binary
from models.model_parts import REGISTRY

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(LLAMA_CPP_ERROR is not None, reason=LLAMA_CPP_ERROR or ""),
]


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Path]:
    """A temporary aisearch cache holding links to the assembled models and the fetched BFCL."""
    if not all(model_path(alias).is_file() for alias in REGISTRY) or not bfcl_dir().is_dir():
        pytest.skip("needs the assembled models and BFCL in the cache (aisearch models assemble; eval bfcl)")
    (tmp_path / "models").symlink_to(model_path(next(iter(REGISTRY))).parent)
    (tmp_path / "bfcl").symlink_to(bfcl_dir())
    if default_binary().is_file():  # the user's llama-server build, where the moved cache looks for it
        (tmp_path / "llama-server").symlink_to(default_binary().parent.parent)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AISEARCH_CACHE_DIR", str(tmp_path))
        patch.delenv("AISEARCH_DISTILL_DIR", raising=False)
        (tmp_path / "config.toml").write_text("", encoding="utf-8")
        patch.setenv("AISEARCH_CONFIG", str(tmp_path / "config.toml"))  # not the user's own settings
        try:
            yield tmp_path
        finally:
            from models.local_server import stop_server

            stop_server()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_synthesize_curate_train_export_and_evaluate(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = ["--category", "simple_python", "--category", "multiple", "--n", "1"]
    run(capsys, "distill", "synthesize", *tasks, "--samples", "1", "-q")
    counts = run(capsys, "distill", "curate")
    assert counts["trajectories"] == 2 and counts["kept"] >= 1
    budget = run(capsys, "distill", "train", "--max-steps", "2", "--layers", "1", "-q")
    assert budget["steps"] == 2 and budget["peak_rss_mb"] > 0
    train_dir = cache / "distill" / "train"
    assert (train_dir / "loss_curve.png").is_file() and (train_dir / "train.log").is_file()
    manifest = run(capsys, "distill", "export")
    assert manifest["tensors_replaced"] == 7 and Path(manifest["file"]).is_file()
    assert manifest["qtype"] == "Q8_0" and manifest["file_type"] is None  # the update kept as trained

    assert executor_status()["model"] == DISTILLED_ALIAS

    calibration = run(capsys, "distill", "calibrate", "--n", "1", "-q")  # dev, one task per category
    assert calibration["split"] == "dev" and calibration["sha256"] == manifest["sha256"]
    assert executor_status()["decline_threshold"] == calibration["decline_threshold"]

    result = run(capsys, "eval", "executor", "--category", "irrelevance", "--n", "1", "--json", "-q")
    assert result["n"] == 1
    for name in ("base", "teacher", "distilled", "distilled_nothought"):
        assert result[f"{name}_acc"] in (0.0, 1.0) and result[f"{name}_p80_ms"] > 0
        assert result["by_category"]["irrelevance"][f"{name}_acc"] == result[f"{name}_acc"]
