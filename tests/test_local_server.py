"""Unit tests of the local server lifecycle, with a tiny HTTP process standing in for llama.cpp."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.settings import Settings, load_settings
from models import local_server as ls
from models import server_process, server_revival, server_spec
from models.config import DEFAULT_MODELS, ROLES, LocalServerSettings, RoleSettings
from models.errors import MODEL_ERRORS, LocalServerError, describe_model_error
from models.factory import build_chat_model
from models.server_launcher import make_models_resident

REPO = Path(__file__).resolve().parent.parent

DUMMY_SERVER = textwrap.dedent(
    """
    # Stands in for `python -m models.server_launcher`: serves GET /v1/models for the configured aliases.
    import argparse, json, os, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--config_file", required=True)
    parser.add_argument("--swap-models", action="store_true")
    parser.add_argument("--idle-minutes", type=float, default=0.0)
    args = parser.parse_args()
    config = json.load(open(args.config_file))
    mode = os.environ.get("DUMMY_MODE", "ok")
    if mode == "crash":
        print("boom: failed to load model", flush=True)
        sys.exit(1)
    if mode == "hang":
        time.sleep(3600)
    time.sleep(float(os.environ.get("DUMMY_DELAY", "0")))
    aliases = [m["model_alias"] for m in config["models"]]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != "/v1/models":
                self.send_error(404)
                return
            body = json.dumps({"object": "list", "data": [{"id": a} for a in aliases]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            message = {"role": "assistant", "content": f"pong from {os.getpid()}"}
            body = json.dumps({
                "id": "c1", "object": "chat.completion", "created": 0, "model": aliases[0],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    ThreadingHTTPServer((config["host"], config["port"]), Handler).serve_forever()
    """
)


@pytest.fixture
def dummy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Isolated cache dir, the dummy server as launcher (no real model), llama_cpp treated as installed."""
    monkeypatch.delenv(ls.FORBID_ENV, raising=False)
    (tmp_path / "dummy_llama_server.py").write_text(DUMMY_SERVER)
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(REPO)]))
    monkeypatch.setattr(ls, "LAUNCHER_MODULE", "dummy_llama_server")
    monkeypatch.setattr(ls, "llama_cpp_available", lambda: True)
    yield tmp_path
    ls.stop_server(timeout_s=5)


def make_settings(tmp_path: Path, **local: Any) -> Settings:
    """All roles local; the executor on its own model; both are 'own GGUF' files (no assembly)."""
    for name in ("big.gguf", "small.gguf"):
        (tmp_path / name).write_bytes(b"GGUF")
    roles = {role: RoleSettings(model="big") for role in ROLES}
    roles["executor"] = RoleSettings(model="small")
    gguf = {"big": str(tmp_path / "big.gguf"), "small": str(tmp_path / "small.gguf")}
    # the lifecycle of llama-cpp-python's server (the dummy stands in for it); llama-server's own
    # is tests/test_llama_server.py
    local = {"server": "llama-cpp-python", **local}
    return Settings(roles=roles, local=LocalServerSettings(gguf=gguf, start_timeout_s=20, **local))


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ---- pure functions ---------------------------------------------------------------------------


def test_free_port_is_bindable() -> None:
    port = server_process.free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    assert not server_process.port_open("127.0.0.1", port, timeout_s=0.2)


def test_served_aliases_follow_the_local_roles(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert server_spec.served_aliases(settings) == ["big", "small"]
    settings.roles["executor"] = RoleSettings(model="gpt-x", base_url="https://api.example.com/v1")
    assert server_spec.served_aliases(settings) == ["big"]
    for role in ROLES:
        settings.roles[role] = RoleSettings(model="gpt-x", base_url="https://api.example.com/v1")
    assert server_spec.served_aliases(settings) == list(dict.fromkeys(DEFAULT_MODELS.values()))


def test_default_settings_serve_both_bundled_models() -> None:
    settings = load_settings(env={})
    assert server_spec.served_aliases(settings) == [
        "qwen2.5-coder-1.5b-instruct",
        "qwen2.5-coder-0.5b-instruct",
    ]


def test_own_gguf_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF")
    settings = load_settings(
        env={"AISEARCH_WRITER_MODEL": str(own), "AISEARCH_LOCAL_GGUF": f"qwen2.5-coder-0.5b-instruct={own}"}
    )
    models = server_spec.resolve_models(settings, assemble_missing=False)
    assert models[str(own)] == own  # a role's model given as a path
    assert models["qwen2.5-coder-0.5b-instruct"] == own  # a built-in alias overridden
    assert models["qwen2.5-coder-1.5b-instruct"].parent == tmp_path / "cache" / "models"


def test_unknown_model_and_missing_file_are_clear_errors(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    settings.roles["writer"] = RoleSettings(model="mystery")
    with pytest.raises(LocalServerError, match="mystery"):
        server_spec.resolve_models(settings)
    settings.roles["writer"] = RoleSettings(model=str(tmp_path / "gone.gguf"))
    with pytest.raises(LocalServerError, match="not found"):
        server_spec.resolve_models(settings)


def test_server_config_has_aliases_threads_ctx_and_chat_format(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, n_threads=3, n_ctx=2048)
    config = server_spec.server_config(settings, server_spec.resolve_models(settings), 1234)
    assert config["host"] == "127.0.0.1" and config["port"] == 1234
    assert config["interrupt_requests"] is False
    assert [m["model_alias"] for m in config["models"]] == ["big", "small"]
    for model in config["models"]:
        assert model["n_threads"] == 3 and model["n_threads_batch"] == 3 and model["n_ctx"] == 2048
        assert model["chat_format"] == "chatml-function-calling"
        assert model["cache"] is True and model["cache_type"] == "ram" and model["cache_size"] == 1 << 30


def test_the_prompt_cache_can_be_turned_off(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, prompt_cache_bytes=0)
    config = server_spec.server_config(settings, server_spec.resolve_models(settings), 1234)
    assert all(model["cache"] is False for model in config["models"])


def test_missing_llama_cpp_says_run_bootstrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ls.FORBID_ENV)  # no model is loaded: the check before it fails
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))  # never the user's running server
    monkeypatch.setattr(ls, "llama_cpp_available", lambda: False)
    with pytest.raises(LocalServerError, match="scripts/bootstrap.sh"):
        ls.ensure_server(make_settings(tmp_path))


def test_pid_alive() -> None:
    assert server_process.pid_alive(os.getpid())
    assert not server_process.pid_alive(dead_pid())


# ---- lifecycle with the dummy server ------------------------------------------------------------


def test_start_records_state_and_reuses(dummy: Path) -> None:
    settings = make_settings(dummy)
    state, started = ls.ensure_server_state(settings)
    assert started
    assert state["base_url"] == f"http://127.0.0.1:{state['port']}/v1"
    assert ls.read_state() == state
    assert set(state["models"]) == {"big", "small"} and Path(state["log"]).exists()
    assert ls.health(state["base_url"]) == ["big", "small"]

    again, started_again = ls.ensure_server_state(settings)
    assert not started_again and again["pid"] == state["pid"]
    assert ls.ensure_server(settings) == state["base_url"]
    status = ls.server_status()
    assert status["running"] and status["healthy"] == ["big", "small"]


def test_the_server_is_told_its_idle_timeout(dummy: Path) -> None:
    state, _ = ls.ensure_server_state(make_settings(dummy, idle_minutes=7))
    assert "--idle-minutes 7.0" in Path(state["log"]).read_text().splitlines()[-1]
    ls.stop_server(timeout_s=5)

    state, _ = ls.ensure_server_state(make_settings(dummy, idle_minutes=0))
    assert "--idle-minutes" not in Path(state["log"]).read_text().splitlines()[-1], "0: it never exits"


def test_stale_pid_in_state_starts_a_new_server(dummy: Path) -> None:
    settings = make_settings(dummy)
    first, _ = ls.ensure_server_state(settings)
    ls._write_state({**first, "pid": dead_pid()})
    assert not ls.server_status()["running"]
    second, started = ls.ensure_server_state(settings)
    assert started and second["pid"] != first["pid"]
    os.kill(first["pid"], 15)  # the orphan of this test


def test_recorded_pid_of_another_process_is_not_reused_nor_killed(dummy: Path) -> None:
    settings = make_settings(dummy)
    first, _ = ls.ensure_server_state(settings)
    ls.stop_server()
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ls._write_state({**first, "pid": stranger.pid})
        state, started = ls.ensure_server_state(settings)
        assert started and state["pid"] != stranger.pid
        assert stranger.poll() is None, "a process that is not our server must never be killed"
    finally:
        stranger.kill()
        stranger.wait()


def test_other_models_restart_the_server_other_options_only_warn(
    dummy: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, _ = ls.ensure_server_state(make_settings(dummy, n_ctx=1024))
    with caplog.at_level("WARNING", logger="models.local_server"):
        same, started = ls.ensure_server_state(make_settings(dummy, n_ctx=2048))
    assert not started and same["pid"] == first["pid"]
    assert "other settings" in caplog.text and "aisearch models stop" in caplog.text

    settings = make_settings(dummy)
    settings.roles["writer"] = RoleSettings(model="small")
    settings.roles["executor"] = RoleSettings(model="third")
    (dummy / "third.gguf").write_bytes(b"GGUF")
    settings.local.gguf["third"] = str(dummy / "third.gguf")
    second, started = ls.ensure_server_state(settings)
    assert started and second["pid"] != first["pid"]
    assert not server_process.pid_alive(first["pid"])
    assert sorted(ls.health(second["base_url"]) or []) == ["big", "small", "third"]

    subset = make_settings(dummy)  # big + small are both served by the new server: reuse
    assert ls.ensure_server_state(subset)[0]["pid"] == second["pid"]


def test_a_restart_for_another_model_keeps_the_models_served(dummy: Path) -> None:
    """Two commands wanting different models share one server instead of restarting it in turn."""
    teacher_only = make_settings(dummy)
    teacher_only.roles = {role: RoleSettings(model="big") for role in ROLES}
    first, started = ls.ensure_server_state(teacher_only)
    assert started and ls.health(first["base_url"]) == ["big"]
    small_only = make_settings(dummy)
    small_only.roles = {role: RoleSettings(model="small") for role in ROLES}
    second, started = ls.ensure_server_state(small_only)
    assert started and sorted(ls.health(second["base_url"]) or []) == ["big", "small"]
    again, started = ls.ensure_server_state(teacher_only)
    assert not started and again["pid"] == second["pid"]


def test_stop_server(dummy: Path) -> None:
    state, _ = ls.ensure_server_state(make_settings(dummy))
    assert ls.stop_server() is True
    assert not server_process.pid_alive(state["pid"])
    assert ls.read_state() is None
    assert ls.stop_server() is False
    assert ls.server_status() == {"running": False}


def test_running_server_stops_only_what_it_started(dummy: Path) -> None:
    settings = make_settings(dummy)
    with ls.running_server(settings, stop_on_exit=True) as url:
        pid = ls.read_state()["pid"]
        assert ls.health(url) == ["big", "small"]
    assert not server_process.pid_alive(pid)

    with ls.running_server(settings) as url:  # default: keep running for reuse
        pid = ls.read_state()["pid"]
    assert server_process.pid_alive(pid)
    with ls.running_server(settings, stop_on_exit=True):  # reused, so not ours to stop
        pass
    assert server_process.pid_alive(pid)
    settings.local.keep_running = False
    ls.stop_server()
    with ls.running_server(settings):
        pid = ls.read_state()["pid"]
    assert not server_process.pid_alive(pid)


def test_server_that_dies_reports_the_log_tail(dummy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUMMY_MODE", "crash")
    with pytest.raises(LocalServerError, match="boom: failed to load model") as info:
        ls.ensure_server(make_settings(dummy))
    assert "exited with code 1" in str(info.value)
    assert ls.read_state() is None


def test_server_that_never_gets_healthy_times_out_and_is_killed(
    dummy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DUMMY_MODE", "hang")
    settings = make_settings(dummy)
    settings.local.start_timeout_s = 1.0
    before = set(_children())
    with pytest.raises(LocalServerError, match="did not become healthy within 1 s"):
        ls.ensure_server(settings)
    assert not [pid for pid in _children() if pid not in before and server_process.pid_alive(pid)]


def _children() -> list[int]:
    """Pids of this process's children (Linux)."""
    path = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


CONCURRENT_CLIENT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from models import local_server as ls
    from core.settings import Settings
    from models.config import LocalServerSettings, RoleSettings
    ls.LAUNCHER_MODULE = "dummy_llama_server"
    ls.llama_cpp_available = lambda: True
    tmp = Path(sys.argv[1])
    settings = Settings(
        roles={r: RoleSettings(model="big") for r in ("master", "planner", "executor", "writer")},
        local=LocalServerSettings(gguf={"big": str(tmp / "big.gguf")}, server="llama-cpp-python"),
    )
    state, started = ls.ensure_server_state(settings)
    print(json.dumps({"pid": state["pid"], "started": started}))
    """
)


def test_two_cli_runs_at_once_start_one_server(dummy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (dummy / "big.gguf").write_bytes(b"GGUF")
    monkeypatch.setenv("DUMMY_DELAY", "1.0")  # a slow start, so the second run arrives meanwhile
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_CLIENT, str(dummy)], stdout=subprocess.PIPE, text=True, cwd=REPO
        )
        for _ in range(2)
    ]
    results = [json.loads(proc.communicate(timeout=60)[0]) for proc in procs]
    assert results[0]["pid"] == results[1]["pid"]
    assert sorted(r["started"] for r in results) == [False, True]


# ---- the resident-models patch of llama_cpp.server -------------------------------------------


class FakeProxy:
    """Mimics llama_cpp.server.model.LlamaProxy 0.3.36: loads the default, swaps on demand."""

    loads: list[str] = []

    def __init__(self, models: list[Any]) -> None:
        self._model_settings_dict = {m.model_alias: m for m in models}
        self._default_model_alias = models[0].model_alias
        self._current_model = self.load_llama_from_model_settings(models[0])
        self._current_model_alias = self._default_model_alias

    def __call__(self, model: str | None = None) -> Any:
        raise AssertionError("replaced by the patch")

    @staticmethod
    def load_llama_from_model_settings(settings: Any) -> Any:
        FakeProxy.loads.append(settings.model_alias)
        return types.SimpleNamespace(alias=settings.model_alias, close=lambda: None)


def test_resident_patch_loads_each_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    package = types.ModuleType("llama_cpp")
    server = types.ModuleType("llama_cpp.server")
    model_module = types.ModuleType("llama_cpp.server.model")
    model_module.LlamaProxy = FakeProxy  # type: ignore[attr-defined]
    server.model = model_module  # type: ignore[attr-defined]
    package.server = server  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp", package)
    monkeypatch.setitem(sys.modules, "llama_cpp.server", server)
    monkeypatch.setitem(sys.modules, "llama_cpp.server.model", model_module)
    FakeProxy.loads = []
    make_models_resident()
    proxy = FakeProxy([types.SimpleNamespace(model_alias=a) for a in ("big", "small")])
    assert [proxy(a).alias for a in ("small", "big", "small", None, "unknown")] == [
        "small",
        "big",
        "small",
        "big",
        "big",
    ]
    assert FakeProxy.loads == ["big", "small"]


def test_resident_patch_matches_the_installed_llama_cpp() -> None:
    """The attributes the patch relies on exist in the installed llama_cpp.server (0.3.36)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (run scripts/bootstrap.sh)")
    import inspect

    from llama_cpp.server.model import LlamaProxy

    source = inspect.getsource(LlamaProxy)
    for name in ("_model_settings_dict", "_current_model_alias", "_default_model_alias", "_current_model"):
        assert name in source
    assert callable(LlamaProxy.load_llama_from_model_settings)


def test_the_server_runs_with_a_fixed_malloc_mmap_threshold_unless_the_user_sets_one() -> None:
    env = server_spec.server_env({"PATH": "/bin", "MALLOC_ARENA_MAX": "4"})
    assert env["MALLOC_MMAP_THRESHOLD_"] == str(1 << 20)
    assert env["MALLOC_TRIM_THRESHOLD_"] == str(1 << 20)
    assert env["MALLOC_ARENA_MAX"] == "4"  # the user's own setting wins
    assert env["PATH"] == "/bin" and env["PYTHONUNBUFFERED"] == "1"


def test_the_started_server_process_has_the_allocator_settings(dummy: Path) -> None:
    state, _ = ls.ensure_server_state(make_settings(dummy))
    environ = Path(f"/proc/{state['pid']}/environ").read_bytes().split(b"\0")
    assert f"MALLOC_MMAP_THRESHOLD_={1 << 20}".encode() in environ
    ls.stop_server(timeout_s=5)


# ---- a server that died mid-run is started again ----------------------------------------------


def kill_recorded_server() -> dict[str, Any]:
    """SIGKILL the recorded server (as the OOM killer would) and wait until it is gone."""
    state = ls.read_state()
    assert state is not None
    os.kill(int(state["pid"]), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while ls.server_alive(state) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ls.server_alive(state)
    return state


def test_a_killed_local_server_is_started_again_by_the_next_model_call(dummy: Path) -> None:
    settings = make_settings(dummy)
    model = build_chat_model("master", settings)
    killed = kill_recorded_server()

    reply = asyncio.run(model.ainvoke("hello"))
    revived = ls.read_state()
    assert revived is not None and revived["pid"] != killed["pid"]
    assert reply.content == f"pong from {revived['pid']}"

    kill_recorded_server()
    again = model.invoke("hello")  # the sync client too
    assert again.content == f"pong from {ls.read_state()['pid']}"


def test_restarts_are_bounded_and_a_server_that_cannot_start_is_a_model_error(
    dummy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(dummy)
    model = build_chat_model("master", settings)
    kill_recorded_server()
    monkeypatch.setenv("DUMMY_MODE", "crash")  # the restarted server fails to load its model
    with pytest.raises(MODEL_ERRORS) as failed:
        asyncio.run(model.ainvoke("hello"))
    assert "not running" in describe_model_error(failed.value)

    monkeypatch.delenv("DUMMY_MODE")
    monkeypatch.setattr(server_revival, "MAX_RESTARTS", 0)
    bounded = build_chat_model("master", settings)  # starts a healthy server
    killed = kill_recorded_server()
    with pytest.raises(MODEL_ERRORS):
        asyncio.run(bounded.ainvoke("hello"))
    assert ls.read_state() == killed, "no restart past the budget"
