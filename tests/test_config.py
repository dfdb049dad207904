"""Settings precedence: environment over config file over defaults; clear errors."""

from __future__ import annotations

import pytest

from core.settings import load_settings
from models.config import ConfigError, masked


def write(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_defaults_use_the_embedded_local_models(tmp_path) -> None:
    settings = load_settings(env={"AISEARCH_CONFIG": str(write(tmp_path, ""))})
    assert settings.role("executor").model == "qwen2.5-coder-0.5b-instruct"
    assert settings.role("planner").is_local and settings.role("planner").constrain_json


def test_env_wins_over_file_and_role_specific_wins_over_global(tmp_path) -> None:
    path = write(
        tmp_path,
        """
[models.default]
base_url = "http://file/v1"
model = "file-model"
[models.writer]
model = "file-writer"
temperature = 0.3
[budgets]
max_replans = 5
""",
    )
    env = {
        "AISEARCH_MODEL": "env-model",
        "AISEARCH_WRITER_BASE_URL": "http://env-writer/v1",
        "AISEARCH_BUDGET_MAX_REPLANS": "1",
        "AISEARCH_DB": str(tmp_path / "x.sqlite"),
    }
    settings = load_settings(path, env=env)
    assert settings.role("master").model == "env-model"
    assert settings.role("master").base_url == "http://file/v1"
    assert settings.role("writer").base_url == "http://env-writer/v1"
    assert settings.role("writer").temperature == 0.3
    assert not settings.role("writer").constrain_json
    assert settings.budgets.max_replans == 1
    assert settings.db_path == tmp_path / "x.sqlite"


def test_the_hop_reader_reads_with_the_writers_settings_unless_given_its_own(tmp_path) -> None:
    path = write(
        tmp_path,
        """
[models.writer]
model = "file-writer"
temperature = 0.3
[models.reader]
max_tokens = 32
""",
    )
    env = {"AISEARCH_MODEL": "env-model", "AISEARCH_WRITER_BASE_URL": "http://env-writer/v1"}
    reader = load_settings(path, env=env).role("reader")
    assert reader.model == "env-model", "the writer's model (the all-roles variable beats its file table)"
    assert reader.base_url == "http://env-writer/v1", "the writer's own variable is not undone by AISEARCH_*"
    assert (reader.temperature, reader.max_tokens) == (0.3, 32)

    own = load_settings(path, env={**env, "AISEARCH_READER_MODEL": "/models/hop-reader.gguf"})
    assert own.role("reader").model == "/models/hop-reader.gguf"
    assert own.role("writer").model == "env-model", "the reader's model is not the writer's"


def test_secrets_are_masked(tmp_path) -> None:
    settings = load_settings(write(tmp_path, ""), env={"AISEARCH_API_KEY": "sk-very-secret-key"})
    shown = masked(settings)
    assert "very-secret" not in str(shown) and shown["roles"]["master"]["api_key"].startswith("sk-")


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("[models.critic]\nmodel='x'", {}, "unknown role"),
        ("[budgets]\nmax_waves = 0", {}, "max_waves"),
        ("not = [toml", {}, "not valid TOML"),
        ("", {"AISEARCH_BUDGET_MAX_TASKS": "many"}, "max_tasks"),
        ("document_probe_similarity = 1.5", {}, "document_probe_similarity"),
    ],
)
def test_invalid_configuration_is_a_clear_error(tmp_path, text: str, env: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(write(tmp_path, text), env=env)


def test_missing_explicit_config_file_is_an_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml", env={})


def test_search_settings_come_from_the_file(tmp_path) -> None:
    text = "document_probe_similarity = 0.6\n[budgets]\nsearch_k = 8\n[local]\nprompt_cache_bytes = 0\n"
    settings = load_settings(write(tmp_path, text), env={})
    assert settings.document_probe_similarity == 0.6 and settings.budgets.search_k == 8
    assert settings.local.prompt_cache_bytes == 0
