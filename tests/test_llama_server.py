"""llama-server as the local model server (``local.server = "llama-server"``).

The lifecycle runs against a tiny executable standing in for the llama-server router (it reads the
preset, lists its aliases as loaded, answers ``/metrics`` and chat calls), so no model loads; the
last tests (marked ``local_model``) run the real binary on the real models.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings import Settings, load_settings
from models import llama_server
from models import local_server as ls
from models.config import ROLES, ConfigError, LocalServerSettings, RoleSettings, load_model_settings
from models.errors import LocalServerError
from models.llama_server_launcher import parse_metrics
from models.server_process import pid_alive

REPO = Path(__file__).resolve().parent.parent

DUMMY_ROUTER = textwrap.dedent(
    """\
    #!{python}
    # Stands in for `llama-server --models-preset INI ...`: serves the preset's aliases.
    import argparse, configparser, json, os, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--models-preset")
    parser.add_argument("--models-max")
    parser.add_argument("--no-ui", action="store_true")
    args = parser.parse_args()
    ini = configparser.ConfigParser()
    ini.read_string("[top]\\n" + open(args.models_preset).read())
    aliases = [s for s in ini.sections() if s not in ("top", "*")]
    served = {{"n": 0}}

    class Handler(BaseHTTPRequestHandler):
        def reply(self, body, kind="application/json"):
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/v1/models":
                data = [{{"id": a, "status": {{"value": "loaded"}}}} for a in aliases]
                self.reply(json.dumps({{"object": "list", "data": data}}).encode())
            elif self.path.startswith("/metrics"):
                text = f"llamacpp:tokens_predicted_total {{served['n']}}\\nllamacpp:requests_processing 0\\n"
                self.reply(text.encode(), "text/plain")
            else:
                self.send_error(404)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            served["n"] += 1
            message = {{"role": "assistant", "content": f"pong from {{os.getpid()}}"}}
            self.reply(json.dumps({{
                "id": "c1", "object": "chat.completion", "created": 0, "model": aliases[0],
                "choices": [{{"index": 0, "message": message, "finish_reason": "stop"}}],
            }}).encode())

        def log_message(self, *args):
            pass

    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()
    """
)


def make_settings(tmp_path: Path, binary: Path, **local: Any) -> Settings:
    """All roles local on two 'own GGUF' files, served by llama-server at ``binary``."""
    for name in ("big.gguf", "small.gguf"):
        (tmp_path / name).write_bytes(b"GGUF")
    roles = {role: RoleSettings(model="big") for role in ROLES}
    roles["executor"] = RoleSettings(model="small")
    gguf = {"big": str(tmp_path / "big.gguf"), "small": str(tmp_path / "small.gguf")}
    options = {"gguf": gguf, "start_timeout_s": 20, "server": "llama-server", "llama_server_bin": str(binary)}
    return Settings(roles=roles, local=LocalServerSettings(**{**options, **local}))


@pytest.fixture
def router(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An isolated cache dir and the dummy router as the llama-server binary."""
    monkeypatch.delenv(ls.FORBID_ENV, raising=False)
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    binary = tmp_path / "llama-server"
    binary.write_text(DUMMY_ROUTER.format(python=sys.executable))
    binary.chmod(0o755)
    yield binary
    ls.stop_server(timeout_s=5)


def children_of(pid: int) -> list[int]:
    """Pids of ``pid``'s children (Linux)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


# ---- configuration ----------------------------------------------------------------------------


def test_the_server_is_chosen_in_the_configuration(tmp_path: Path) -> None:
    assert load_model_settings(env={}).local.server == "llama-server"
    assert (
        load_model_settings(env={"AISEARCH_LOCAL_SERVER": "llama-cpp-python"}).local.server
        == "llama-cpp-python"
    )
    settings = load_model_settings(
        env={"AISEARCH_LOCAL_SERVER": "llama-server", "AISEARCH_LOCAL_PARALLEL": "2"}
    )
    assert settings.local.server == "llama-server" and settings.local.parallel == 2
    config = tmp_path / "config.toml"
    config.write_text('[local]\nserver = "llama-server"\n')
    assert load_model_settings(config, env={}).local.server == "llama-server"


def test_an_unknown_server_is_a_one_line_configuration_error() -> None:
    with pytest.raises(ConfigError, match="server") as caught:
        load_model_settings(env={"AISEARCH_LOCAL_SERVER": "vllm"})
    assert "llama-server" in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_binary_says_how_to_build_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ls.FORBID_ENV)  # nothing loads: the check before the start fails
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))  # no build there
    settings = make_settings(tmp_path, tmp_path / "unused", llama_server_bin=None)
    with pytest.raises(LocalServerError, match="llama-server binary not found") as caught:
        ls.ensure_server(settings)
    assert str(llama_server.BUILD_SCRIPT) in str(caught.value) and llama_server.BUILD_SCRIPT.is_file()
    assert 'local.server = "llama-cpp-python"' in str(caught.value)
    with pytest.raises(LocalServerError, match="AISEARCH_LOCAL_LLAMA_SERVER_BIN"):
        ls.ensure_server(make_settings(tmp_path, tmp_path / "no-such-llama-server"))


def test_a_missing_binary_is_one_line_from_the_cli(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AISEARCH_CACHE_DIR": str(tmp_path / "cache"),
        "AISEARCH_LOCAL_SERVER": "llama-server",
    }
    env.pop(ls.FORBID_ENV, None)
    env.pop("AISEARCH_LOCAL_LLAMA_SERVER_BIN", None)
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "models", "start"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert "llama-server binary not found" in line and "build_llama_server.sh" in line


@pytest.mark.parametrize(
    ("env", "config", "build"),
    [
        ({}, "", "1"),
        ({"AISEARCH_LOCAL_SERVER": "llama-cpp-python"}, "", "0"),
        ({}, '[local]\nserver = "llama-cpp-python"\n', "0"),
        ({"AISEARCH_LOCAL_SERVER": "llama-server"}, "", "1"),
        ({}, '[local]\nserver = "llama-server"\n', "1"),
        (
            {"AISEARCH_LOCAL_SERVER": "llama-server", "AISEARCH_LOCAL_LLAMA_SERVER_BIN": "/opt/llama-server"},
            "",
            "0",
        ),
    ],
)
def test_the_set_up_builds_llama_server_unless_another_server_is_configured(
    tmp_path: Path, env: dict[str, str], config: str, build: str
) -> None:
    script = (REPO / "scripts" / "bootstrap.sh").read_text()
    check = re.search(r"WANTS_BUILD=\"\$\(\"\$VPY\" -c '(.+?)'", script, re.S)
    assert check is not None, "bootstrap.sh decides with a Python one-liner"
    (tmp_path / "config.toml").write_text(config)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AISEARCH_")}
    done = subprocess.run(
        [sys.executable, "-c", check[1]], cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
        env={**clean, "AISEARCH_CONFIG": str(tmp_path / "config.toml"), **env},
    )  # fmt: skip
    assert done.stdout.strip() == build


def test_the_server_benchmark_checks_both_programs_before_starting_either(tmp_path: Path) -> None:
    from bench import servers

    with pytest.raises(LocalServerError, match="llama-server binary not found"):  # not "forbidden"
        asyncio.run(servers.run(make_settings(tmp_path, tmp_path / "no-such-llama-server")))


def test_a_binary_that_is_not_executable_is_named(tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    binary.write_text("")
    with pytest.raises(LocalServerError, match="not executable"):
        llama_server.require_binary(make_settings(tmp_path, binary))


def test_the_preset_serves_every_alias_with_parallel_slots_of_n_ctx(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, tmp_path / "bin", parallel=3, n_ctx=2048, n_threads=2)
    text = llama_server.preset_text(
        settings, {"big": tmp_path / "big.gguf", "small": tmp_path / "small.gguf"}
    )
    assert re.findall(r"^\[(.+)\]$", text, re.M) == ["*", "big", "small"]
    assert f"model = {tmp_path / 'big.gguf'}" in text
    for line in ("parallel = 3", "kv-unified-per-slot = 2048", "threads = 2", "load-mode = none",
                 "metrics = true", "cache-ram = 1024", "chat-template = chatml"):  # fmt: skip
        assert line in text.splitlines()


def test_the_build_script_and_the_code_agree_on_the_version() -> None:
    for script in ("scripts/build_llama_server.sh", "scripts/bootstrap.sh"):
        text = (REPO / script).read_text()
        assert re.search(r'^LLAMA_VERSION="(\$\{LLAMA_VERSION:-)?([0-9.]+)', text, re.M)[2] == (  # type: ignore[index]
            llama_server.LLAMA_SERVER_VERSION
        ), script


def test_metrics_are_parsed_without_their_labels() -> None:
    text = '# HELP x\nllamacpp:requests_processing 2\nllamacpp:n_tokens_max 7.5\nother{a="b"} 1\n'
    assert parse_metrics(text) == {"llamacpp:requests_processing": 2.0, "llamacpp:n_tokens_max": 7.5}


# ---- lifecycle with the dummy router ----------------------------------------------------------


def test_start_reuse_and_stop_take_the_router_with_them(router: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, router)
    state, started = ls.ensure_server_state(settings)
    assert started and state["server"] == "llama-server"
    assert ls.health(state["base_url"]) == ["big", "small"]
    (router_pid,) = children_of(int(state["pid"]))
    again, started_again = ls.ensure_server_state(settings)
    assert not started_again and again["pid"] == state["pid"]
    assert ls.stop_server(timeout_s=10)
    assert not pid_alive(int(state["pid"])) and not pid_alive(router_pid)


def test_an_idle_server_stops_its_router_and_exits(router: Path, tmp_path: Path) -> None:
    state, _ = ls.ensure_server_state(make_settings(tmp_path, router, idle_minutes=0.02))
    (router_pid,) = children_of(int(state["pid"]))
    httpx.post(f"{state['base_url']}/chat/completions", json={"model": "big", "messages": []}, timeout=10)
    deadline = time.monotonic() + 30
    while pid_alive(int(state["pid"])) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(int(state["pid"])) and not pid_alive(router_pid)


def test_a_router_that_dies_takes_the_server_down_and_the_next_call_revives_it(
    router: Path, tmp_path: Path
) -> None:
    from models.factory import build_chat_model

    settings = make_settings(tmp_path, router)
    state, _ = ls.ensure_server_state(settings)
    model = build_chat_model("master", settings)
    (router_pid,) = children_of(int(state["pid"]))
    os.kill(router_pid, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while pid_alive(int(state["pid"])) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(int(state["pid"])), "the launcher exits with its router"
    assert "pong" in str(model.invoke("ping").content)
    assert ls.read_state()["pid"] != state["pid"]  # type: ignore[index]


# ---- the real binary on the real models --------------------------------------------------------


def real_settings(tmp_path: Path) -> Settings:
    """The bundled models (from the normal cache) on the real llama-server, parallel 2, no idle exit."""
    from models.assemble import model_path
    from models.model_parts import REGISTRY

    settings = load_settings(env={})
    binary = llama_server.binary_path(settings)
    if not binary.is_file():
        pytest.skip(f"llama-server is not built (no {binary}); build it with scripts/build_llama_server.sh")
    gguf = {alias: str(model_path(alias)) for alias in REGISTRY}
    settings.local = LocalServerSettings(
        **{**settings.local.model_dump(), "server": "llama-server", "llama_server_bin": binary,
           "gguf": gguf, "parallel": 2, "idle_minutes": 0.0}
    )  # fmt: skip
    return settings


async def streamed_times(base_url: str, model: str, content: str) -> tuple[float, float]:
    """When the first and the last token of a streamed answer arrived (monotonic seconds)."""
    first = last = 0.0
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 24,
            "temperature": 0, "stream": True}  # fmt: skip
    async with httpx.AsyncClient(timeout=300) as client:
        async with client.stream("POST", f"{base_url}/chat/completions", json=body) as resp:
            resp.raise_for_status()
            async for line in resp.aiter_lines():
                if line.startswith("data: ") and '"content":"' in line:
                    last = time.monotonic()
                    first = first or last
    return first, last


@pytest.mark.local_model
def test_two_requests_at_once_are_answered_at_once(tmp_path: Path) -> None:
    settings = real_settings(tmp_path)
    model = settings.role("executor").model

    async def both(base_url: str) -> list[tuple[float, float]]:
        prompts = (
            "Count from 1 to 40, separated by commas.",
            "List the letters A to Z, separated by commas.",
        )
        return list(await asyncio.gather(*(streamed_times(base_url, model, p) for p in prompts)))

    with ls.private_server(settings, tmp_path / "server") as state:
        (a_first, a_last), (b_first, b_last) = asyncio.run(both(state["base_url"]))
        metrics = httpx.get(
            f"http://{state['host']}:{state['port']}/metrics", params={"model": model}, timeout=10
        )
    assert max(a_first, b_first) < min(a_last, b_last), "each answer starts before the other one ends"
    assert parse_metrics(metrics.text)["llamacpp:tokens_predicted_total"] >= 2


@pytest.mark.local_model
def test_json_schema_output_on_llama_server(tmp_path: Path) -> None:
    import json

    settings = real_settings(tmp_path)
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    with ls.private_server(settings, tmp_path / "server") as state:
        resp = httpx.post(
            f"{state['base_url']}/chat/completions",
            json={"model": settings.role("executor").model, "max_tokens": 24, "temperature": 0,
                  "messages": [{"role": "user", "content": "The capital of France, as JSON."}],
                  "response_format": {"type": "json_object", "schema": schema}},
            timeout=300,
        )  # fmt: skip
    resp.raise_for_status()
    assert set(json.loads(resp.json()["choices"][0]["message"]["content"])) == {"city"}


def test_a_server_still_loading_its_models_is_not_idle(tmp_path: Path) -> None:
    """The idle clock starts when a model first answers ``/metrics``: a router whose models take
    longer to load than ``idle_s`` is not stopped before it ever served (a busy CI machine)."""
    import http.server
    import threading

    from models.llama_server_launcher import supervise

    opened_at = time.monotonic()
    loading_s = 1.5

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            if time.monotonic() - opened_at < loading_s:
                self.send_error(503, "Loading model")
                return
            body = b"llamacpp:prompt_tokens_total 0\nllamacpp:requests_processing 0\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    router = [sys.executable, "-c", "import time; time.sleep(60)"]  # a real process to supervise
    config = {
        "command": router,
        "host": "127.0.0.1",
        "port": server.server_address[1],
        "aliases": ["m"],
        "idle_s": 0.4,
    }
    try:
        started = time.monotonic()
        code = supervise(config, threading.Event())
        waited = time.monotonic() - started
    finally:
        server.shutdown()
    assert code == 0, "stopped for idleness, not a crash"
    assert waited >= loading_s, f"stopped after {waited:.1f} s, while the models were still loading"
