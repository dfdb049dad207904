"""The suite's guard against reaching the real local models from a test not marked ``local_model``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.settings import Settings
from models import local_server as ls
from models.config import ROLES, LocalServerSettings, RoleSettings
from models.factory import build_chat_model


def local_settings(tmp_path: Path) -> Settings:
    """Every role on the embedded server, serving a stand-in GGUF file (nothing to assemble); the
    server is llama-cpp-python's, whose start the ``no_start`` fixture replaces."""
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    return Settings(
        roles={role: RoleSettings(model="model") for role in ROLES},
        local=LocalServerSettings(gguf={"model": str(tmp_path / "model.gguf")}, server="llama-cpp-python"),
    )


@pytest.fixture
def no_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """An isolated cache and a server start that only records itself (so nothing loads, guard or not)."""
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(ls, "llama_cpp_available", lambda: True)
    starts: list[Any] = []

    def start(settings: Any, models: Any) -> dict[str, Any]:
        starts.append(models)
        return {"base_url": "http://127.0.0.1:9/v1", "pid": 0}

    monkeypatch.setattr(ls, "_start", start)
    return starts


def test_a_test_not_marked_local_model_cannot_start_the_model_server(
    tmp_path: Path, no_start: list[Any], model_guard: list[str]
) -> None:
    with pytest.raises(ls.LocalModelsForbidden, match="local_model"):
        build_chat_model("master", local_settings(tmp_path))
    assert no_start == []
    assert len(model_guard) == 1, "the attempt is recorded: the test fails even if the code catches it"
    model_guard.clear()  # this test made the attempt on purpose


def test_processes_a_test_starts_are_refused_too(tmp_path: Path) -> None:
    code = "from models.local_server import refuse_if_forbidden; refuse_if_forbidden()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert done.returncode != 0 and "LocalModelsForbidden" in done.stderr


@pytest.mark.local_model
def test_a_local_model_test_may_start_it(tmp_path: Path, no_start: list[Any]) -> None:
    assert ls.ensure_server(local_settings(tmp_path)) == "http://127.0.0.1:9/v1"
    assert len(no_start) == 1
