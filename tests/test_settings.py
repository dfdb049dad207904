"""One settings class: each variable sets its field, a bad value is one clear line, the docs match."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from core.settings import Settings, load_settings
from core.settings_doc import DOC, rows, settings_table, with_table
from models.config import ConfigError
from models.env_settings import env_names
from tools.index.embedder import bulk_threads
from tools.index.paths import default_index_dir
from tools.servers.clock_server import current_time


def _settings(tmp_path: Path, env: dict[str, str]) -> Settings:
    config = tmp_path / "config.toml"
    config.touch()
    return load_settings(config, env=env)


def test_the_docs_table_is_generated_from_the_settings_class() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert with_table(text, settings_table()) == text, "run: python -m core.settings_doc --write"


def test_every_variable_sets_one_setting() -> None:
    variables = [cell for row in rows() for cell in row.split(" | ")[1].split(", ") if cell != "–"]
    assert [name for name, count in Counter(variables).items() if count > 1] == []
    assert len(variables) > 70


@pytest.mark.parametrize(
    ("variable", "value", "read", "expected"),
    [
        ("AISEARCH_BUDGET_MAX_TASKS", "3", lambda s: s.budgets.max_tasks, 3),
        ("AISEARCH_CACHE_ANSWERS", "off", lambda s: s.cache.answers, False),
        ("AISEARCH_LOCAL_N_CTX", "8192", lambda s: s.local.n_ctx, 8192),
        ("AISEARCH_WRITER_MODEL", "big", lambda s: s.role("writer").model, "big"),
        ("AISEARCH_ROUTING", "llm", lambda s: s.routing, "llm"),
        ("AISEARCH_DOCS_SERVER", "no", lambda s: s.docs_server.enabled, False),
        ("AISEARCH_WEB_MAX_PAGES", " 2 ", lambda s: s.websearch.max_pages, 2),
        ("AISEARCH_MAX_RUNS", "4", lambda s: s.http.max_runs, 4),
        ("AISEARCH_INDEX_THREADS", "3", lambda s: s.index.threads, 3),
        ("AISEARCH_DEFAULT_CORPUS_MODULES", "", lambda s: s.index.corpus_modules, ""),
        ("AISEARCH_DOCSEARCH_COLLECTION", "notes", lambda s: s.docsearch.collection, "notes"),
        ("AISEARCH_SANDBOX_NAMESPACES", "0", lambda s: s.servers.sandbox_namespaces, False),
        ("AISEARCH_DISTILL_DIR", "/d", lambda s: s.directories.distill_dir, Path("/d")),
        ("AISEARCH_BFCL_WHEEL", "/w.whl", lambda s: s.evals.bfcl_wheel, Path("/w.whl")),
    ],
)
def test_a_variable_sets_its_field(
    tmp_path: Path, variable: str, value: str, read: Any, expected: Any
) -> None:
    assert read(_settings(tmp_path, {})) != expected
    assert read(_settings(tmp_path, {variable: value})) == expected


def test_secrets_stay_secret(tmp_path: Path) -> None:
    env = {
        "AISEARCH_HTTP_TOKEN": "tok-123",
        "AISEARCH_RERANK_API_KEY": "rk-456",
        "AISEARCH_JUDGE_API_KEY": "jk",
    }
    settings = _settings(tmp_path, env)
    assert "tok-123" not in repr(settings) and "rk-456" not in settings.model_dump_json()
    assert settings.http.token is not None and settings.http.token.get_secret_value() == "tok-123"


@pytest.mark.parametrize(
    ("variable", "value", "key"),
    [
        ("AISEARCH_BUDGET_MAX_TASKS", "many", "budgets.max_tasks"),
        ("AISEARCH_MAX_RUNS", "0", "http.max_runs"),
        ("AISEARCH_INDEX_THREADS", "all", "index.threads"),
        ("AISEARCH_CLOCK_NOW", "tomorrow", "servers.clock_now"),
        ("AISEARCH_STREAM_PLAN", "maybe", "stream_plan"),
        ("AISEARCH_LOCAL_GGUF", "nopath", "local.gguf"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key_and_the_variable(
    tmp_path: Path, variable: str, value: str, key: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        _settings(tmp_path, {variable: value})
    message = str(raised.value)
    assert f"{key} ({variable}={value!r}):" in message and "\n" not in message, message


def test_the_processes_that_read_no_config_file_read_the_same_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AISEARCH_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("AISEARCH_CLOCK_NOW", "2026-11-22T09:00:00")
    monkeypatch.setenv("AISEARCH_INDEX_THREADS", "2")
    assert default_index_dir() == tmp_path / "index"
    assert current_time() == datetime(2026, 11, 22, 9, tzinfo=UTC)
    assert bulk_threads() == 2
    monkeypatch.setenv("AISEARCH_INDEX_THREADS", "-1")
    with pytest.raises(ConfigError, match="AISEARCH_INDEX_THREADS='-1'"):
        bulk_threads()


def test_the_cli_reports_a_bad_variable_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config.toml").touch()
    monkeypatch.setenv("AISEARCH_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("AISEARCH_DB", str(tmp_path / "threads.sqlite"))
    monkeypatch.setenv("AISEARCH_MAX_BODY_BYTES", "big")
    assert main(["serve"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aisearch: error: invalid configuration"), lines
    assert "http.max_body_bytes (AISEARCH_MAX_BODY_BYTES='big')" in lines[0]
    assert not (tmp_path / "threads.sqlite").exists()


def test_role_variables_are_documented_by_pattern() -> None:
    assert env_names(Settings, "routing") == ["AISEARCH_ROUTING"]
    assert any("`AISEARCH_<ROLE>_API_KEY`" in row for row in rows())
