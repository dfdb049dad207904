"""Every configuration file of the wrong type, encoding or shape is one clear line, never a traceback.

The loaders (the TOML config, the ``mcpServers`` JSON as a run and as ``tools add`` read it, the
tool catalogues) are fed directories, invalid UTF-8 and values of the wrong shape; the CLI is run
on the same faults and on thread stores that cannot work, and must exit 2 with one line naming the
file, having written nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.settings import load_settings
from models.config import ConfigError
from tests.conftest import REPO
from tests.support.fake_openai import fake_openai
from tools.catalog.load import CatalogError, read_catalog_file
from tools.mcp_file import read_servers
from tools.registry import ServerConfigError, load_connections

Loader = Callable[[Path], Any]
LOADERS: dict[str, tuple[Loader, type[Exception]]] = {
    "config.toml": (lambda path: load_settings(path, env={}), ConfigError),
    "mcp.json": (load_connections, ServerConfigError),
    "mcp.json for tools add": (read_servers, ServerConfigError),
    "catalogue": (read_catalog_file, CatalogError),
}
INVALID_UTF8 = b'\xff\xfe{"mcpServers": {}} = \xc3\x28\n'
TOML_SHAPES = [
    "models = 5",
    "[models]\ndefault = 5",
    'budgets = "many"',
    "local = 5",
    "docs_server = [1]",
    "cache = 3",
    "[cache]\nsimilarity = [0.9]",
    "paths = 5",
    "[paths]\ndb = 5",
    "[paths]\ntool_catalogs = 5",
    "[budgets]\nmax_waves = [1]",
]
JSON_SHAPES = [
    "5",
    "[]",
    '"mcpServers"',
    '{"mcpServers": 5}',
    '{"mcpServers": {"x": 5}}',
    '{"mcpServers": {"x": {"command": "echo", "args": "not-a-list"}}}',
    '{"mcpServers": {"x": {"command": "echo", "args": ["--port", 8080]}}}',
    '{"mcpServers": {"x": {"command": ["echo"]}}}',
    '{"mcpServers": {"x": {"command": "echo", "env": {"A": 1}}}}',
    '{"mcpServers": {"x": {"command": "echo", "env_passthrough": "HOME"}}}',
    '{"mcpServers": {"x": {"url": 5}}}',
    '{"mcpServers": {"x": {"url": "http://h/mcp", "headers": ["a"]}}}',
    '{"mcpServers": {"x": {"command": "echo", "tools": 5, "description": 5}}}',
    '{"servers": 5}',
    "[5]",
    '[{"name": "x", "tools": {"g": [1]}, "config": {"mcpServers": [1]}}]',
    '[{"name": "x", "tools": {"g": {"tools": 5}}}]',
]


def _check(name: str, path: Path) -> None:
    """``name``'s loader on ``path`` either reads it or raises its own error in one line naming it."""
    load, error = LOADERS[name]
    try:
        load(path)
    except error as exc:
        message = str(exc)
        assert "\n" not in message and str(path) in message, message


def _faults(tmp_path: Path) -> list[Path]:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    (tmp_path / "invalid-utf8").write_bytes(INVALID_UTF8)
    (tmp_path / "binary").write_bytes(bytes(range(256)))
    return [directory, tmp_path / "invalid-utf8", tmp_path / "binary"]


@pytest.mark.parametrize("name", LOADERS)
def test_a_directory_or_invalid_utf8_is_one_line_naming_the_file(name: str, tmp_path: Path) -> None:
    load, error = LOADERS[name]
    for path in _faults(tmp_path):
        with pytest.raises(error) as raised:
            load(path)
        assert "\n" not in str(raised.value) and str(path) in str(raised.value)
    assert "is a directory" in _message(load, error, tmp_path / "a-directory")
    assert "not valid UTF-8 (byte 0xff at offset 0)" in _message(load, error, tmp_path / "invalid-utf8")


def _message(load: Loader, error: type[Exception], path: Path) -> str:
    with pytest.raises(error) as raised:
        load(path)
    return str(raised.value)


@pytest.mark.parametrize("name", LOADERS)
@pytest.mark.parametrize("text", TOML_SHAPES + JSON_SHAPES)
def test_every_loader_takes_any_shape_without_a_traceback(name: str, text: str, tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text(text)
    _check(name, path)


@pytest.mark.parametrize("text", TOML_SHAPES)
def test_a_config_value_of_the_wrong_shape_is_refused(text: str, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    message = _message(LOADERS["config.toml"][0], ConfigError, path)
    assert str(path) in message and "\n" not in message


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ('{"command": "echo", "args": "not-a-list"}', "mcpServers.x.args: Input should be a valid list"),
        (
            '{"command": "echo", "args": ["--port", 8080]}',
            "mcpServers.x.args.1: Input should be a valid string",
        ),
        ('{"command": "echo", "env": {"A": 1}}', "mcpServers.x.env.A"),
        ('{"command": ""}', "mcpServers.x.command"),
        ('{"url": "http://h/mcp", "headers": ["a"]}', "mcpServers.x.headers"),
    ],
)
def test_an_mcp_entry_of_the_wrong_shape_is_a_schema_error(entry: str, where: str, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(f'{{"mcpServers": {{"x": {entry}}}}}')
    message = _message(load_connections, ServerConfigError, path)
    assert message.startswith(f"{path}: {where}"), message


@pytest.fixture(scope="module")
def endpoint() -> Any:
    """A model endpoint that answers, so a run would go as far as the faulty file lets it."""
    with fake_openai([("", "unused")]) as server:
        yield server


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _not_sqlite(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    (tmp / "notes.sqlite").write_text("my notes, not a database\n")
    return [], {"AISEARCH_DB": str(tmp / "notes.sqlite")}, "is not a SQLite database"


def _db_directory(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    (tmp / "threads").mkdir()
    return [], {"AISEARCH_DB": str(tmp / "threads")}, "is a directory"


def _db_under_a_file(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    (tmp / "afile").write_text("x")
    return ["--db", str(tmp / "afile" / "threads.sqlite")], {}, "is not a directory"


def _db_read_only(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    if os.geteuid() == 0:
        pytest.skip("root may write in a read-only directory")
    (tmp / "locked").mkdir(mode=0o500)
    return [], {"AISEARCH_DB": str(tmp / "locked" / "threads.sqlite")}, "is not writable"


def _config_directory(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    (tmp / "conf.d").mkdir()
    return [], {"AISEARCH_CONFIG": str(tmp / "conf.d")}, "is a directory"


def _config_utf8(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    (tmp / "config.toml").write_bytes(b"[models.default]\nmodel = '\xff'\n")
    return [], {}, "not valid UTF-8"


def _config_models(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    (tmp / "config.toml").write_text("models = 5\n")
    return [], {}, "models: Input should be a valid dictionary"


def _mcp_utf8(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    (tmp / "mcp.json").write_bytes(INVALID_UTF8)
    return ["--mcp-config", str(tmp / "mcp.json")], {}, "not valid UTF-8"


def _mcp_args(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    (tmp / "mcp.json").write_text('{"mcpServers": {"x": {"command": "echo", "args": "not-a-list"}}}')
    return ["--mcp-config", str(tmp / "mcp.json")], {}, "mcpServers.x.args"


FAULTS = {
    "db-not-sqlite": _not_sqlite,
    "db-directory": _db_directory,
    "db-under-a-file": _db_under_a_file,
    "db-read-only": _db_read_only,
    "config-directory": _config_directory,
    "config-invalid-utf8": _config_utf8,
    "config-models-5": _config_models,
    "mcp-invalid-utf8": _mcp_utf8,
    "mcp-args-string": _mcp_args,
}


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.slow
def test_the_cli_says_what_is_wrong_in_one_line_and_writes_nothing(
    fault: str, endpoint: Any, tmp_path: Path
) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "config.toml").touch()
    options, env, problem = FAULTS[fault](tmp_path)
    environment = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "AISEARCH_BASE_URL": endpoint.url,
        "AISEARCH_CONFIG": str(tmp_path / "config.toml"),
        "AISEARCH_DB": str(tmp_path / "threads.sqlite"),
        "AISEARCH_TOOLS_DIR": str(tmp_path / "tools"),
        **env,
    }
    before = _snapshot(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "ask", "hello", *options],
        env=environment,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aisearch: error: ") and problem in lines[0], done.stderr
    assert _snapshot(tmp_path) == before, "nothing is written"


@pytest.mark.slow
def test_serve_refuses_a_thread_store_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "threads").mkdir()
    (tmp_path / "config.toml").touch()
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--db", str(tmp_path / "threads"), "--port", "0"],
        env={**os.environ, "AISEARCH_CONFIG": str(tmp_path / "config.toml"), "HOME": str(tmp_path)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"aisearch: error: thread store {tmp_path / 'threads'} is a directory, not a SQLite file"
    ], done.stderr
