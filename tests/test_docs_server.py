"""The long-lived document server (``tools/docs_server.py``): real server processes on a temp index.

Started on first use and reused (also by another process), MCP search over streamable HTTP and
``/embed``, a dead or stale record replaced, the idle timeout, the route classifier through its
embedder, the CLI on it and without it (Ctrl-C while it starts, a server that cannot start).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.route_classifier import RouteClassifier, load_examples
from models.idle_http import RETIRE_S
from models.server_process import pid_alive as alive
from tests.conftest import FIXED_NOW, REPO
from tests.support.fake_openai import fake_openai
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, WRITER, assessment
from tools.docs_server import (
    docs_server_status,
    ensure_docs_server,
    mcp_connection,
    read_state,
    state_dir,
    stop_docs_server,
)
from tools.hub import ToolHub
from tools.index.embedder import shared_embedder
from tools.index.remote_embedder import RemoteEmbedder, routing_embedder
from tools.registry import DOCSEARCH_MODULE

IDLE_S = 300.0  # long enough for a test, short enough that a leftover goes away by itself
QUESTION = "When did the Kestrel Bridge open?"
RULES = [
    (MASTER, assessment("moderate", resolved=QUESTION, intent="a date")),
    (EXEC_ARGS, {"query": "Kestrel Bridge opened"}),
    (EXEC_JUDGE, {"sufficient": True, "result": "1932"}),
    ("say why", "The Kestrel Bridge opened to traffic in 1932 [1]."),
    (WRITER, "1932"),
    ("", "DONE"),
]


def server_pids(index_dir: Path) -> list[int]:
    """Pids of document server processes (HTTP docsearch) started for ``index_dir``."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            DOCSEARCH_MODULE.encode() in args
            and b"streamable-http" in args
            and str(index_dir).encode() in args
        ):
            pids.append(int(proc.name))
    return pids


def wait_until(condition: Any, timeout_s: float, step_s: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step_s)
    return bool(condition())


def cleanup(index_dir: Path) -> None:
    """Stop the recorded server and anything else started for ``index_dir``."""
    stop_docs_server(index_dir)
    for pid in server_pids(index_dir):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def server_env(fixture_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The document server switched on, its state in a temp cache, the fixture index as the user's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AISEARCH_DOCS_SERVER", "1")
        mp.setenv("AISEARCH_CACHE_DIR", str(tmp_path_factory.mktemp("docs-server-cache")))
        mp.setenv("AISEARCH_INDEX_DIR", str(fixture_index))
        yield fixture_index
        cleanup(fixture_index)


@pytest.fixture(scope="module")
def running(server_env: Path) -> dict[str, Any]:
    """A document server over the fixture index, started once for the module's tests."""
    state, started = ensure_docs_server(idle_s=IDLE_S)
    assert started
    return state


@pytest.mark.slow
async def test_it_starts_once_is_reused_and_serves_search_over_mcp_http(running: dict[str, Any]) -> None:
    again, started = ensure_docs_server(idle_s=IDLE_S)
    assert not started and again["pid"] == running["pid"]
    assert running["url"].startswith("http://127.0.0.1:")
    async with ToolHub.open({"docsearch": mcp_connection(running)}) as hub:
        assert hub.server_errors == {}
        assert {"docsearch.search", "docsearch.read"} <= set(hub.specs)
        outcome = await hub.call("docsearch.search", {"query": QUESTION, "k": 3}, timeout_s=60)
    assert outcome.ok, outcome.error
    assert outcome.structured["results"][0]["title"] == "Kestrel Bridge"


@pytest.mark.slow
def test_another_process_reuses_it_through_the_cli(running: dict[str, Any]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "docs", "start", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout)
    assert state["pid"] == running["pid"] and state["started_now"] is False
    status = subprocess.run(
        [sys.executable, "-m", "app.cli", "docs", "status"], cwd=REPO, capture_output=True, text=True
    )
    assert status.returncode == 0 and f"pid {running['pid']}" in status.stdout


@pytest.mark.slow
def test_embed_gives_the_in_process_vectors(running: dict[str, Any]) -> None:
    texts = ["Where was the director of X born?", "What is 17 * 23 + 4?", "sort a list in place"]
    remote = RemoteEmbedder(running["url"]).encode(texts)
    assert remote.shape == (3, 384) and remote.dtype == np.float32
    assert np.allclose(remote, shared_embedder().encode(texts), atol=1e-5)
    assert np.allclose(RemoteEmbedder(running["url"]).encode_query(texts[1]), remote[1], atol=1e-6)


@pytest.mark.slow
def test_the_router_labels_the_same_through_the_server(
    running: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = routing_embedder()
    assert isinstance(embedder, RemoteEmbedder) and embedder.url.startswith(running["url"])
    examples = load_examples()
    remote, local = RouteClassifier(embedder, examples), RouteClassifier(shared_embedder(), examples)
    queries = [
        "Which came first, the Kestrel Bridge or the River Ome?",
        "Where was the engineer who built the lighthouse born?",
        "How do I pretty-print JSON in Python?",
        "What time is it in Tokyo now?",
        "Who is elder, Emperor Han-Wu or Emperor Caesar, by how many years?",
        "What is the name of Emperor Han-Wu?",
    ]
    for query in queries:
        a, b = remote.classify(query), local.classify(query)
        assert (a.label, a.confident) == (b.label, b.confident), query
        assert abs(a.share - b.share) < 1e-4 and abs(a.nearest - b.nearest) < 1e-4
    monkeypatch.setenv("AISEARCH_DOCS_SERVER", "0")
    assert not isinstance(routing_embedder(), RemoteEmbedder), "switched off: MiniLM in this process"


def test_a_dead_server_falls_back_to_the_in_process_embedder() -> None:
    embedder = RemoteEmbedder("http://127.0.0.1:9", timeout_s=2)  # nothing listens on the discard port
    vector = embedder.encode_query("What is 17 * 23 + 4?")
    assert np.allclose(vector, shared_embedder().encode_query("What is 17 * 23 + 4?"), atol=1e-6)


@pytest.mark.slow
async def test_a_server_that_dies_mid_run_is_an_error_result_not_a_crash(
    server_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))  # a server of its own
    state, _ = ensure_docs_server(idle_s=IDLE_S)
    async with ToolHub.open({"docsearch": mcp_connection(state)}) as hub:
        os.kill(state["pid"], signal.SIGKILL)
        assert wait_until(lambda: not alive(state["pid"]), 10)
        outcome = await hub.call("docsearch.search", {"query": QUESTION}, timeout_s=5)
    assert not outcome.ok and "docsearch.search" in outcome.error
    replaced, started = ensure_docs_server(idle_s=IDLE_S)  # the next run starts a new one
    assert started and replaced["pid"] != state["pid"]
    stop_docs_server()


@pytest.mark.slow
def test_a_dead_or_stale_record_is_replaced(server_env: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    directory = state_dir()
    directory.mkdir(parents=True)
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead = {"pid": finished.pid, "port": 9, "url": "http://127.0.0.1:9", "index_dir": str(server_env)}
    (directory / "state.json").write_text(json.dumps(dead))
    first, started = ensure_docs_server(idle_s=IDLE_S)
    assert started and first["pid"] != finished.pid and alive(first["pid"])

    stale = {**first, "fingerprint": {**first["fingerprint"], "code": "older"}}
    (directory / "state.json").write_text(json.dumps(stale))
    assert docs_server_status()["current"] is False
    second, started = ensure_docs_server(idle_s=IDLE_S)
    assert started and second["pid"] != first["pid"]
    assert wait_until(lambda: not alive(first["pid"]), 10), "the stale server was stopped"
    assert stop_docs_server() and not alive(second["pid"]) and read_state() is None


@pytest.mark.slow
async def test_a_replaced_server_finishes_the_run_that_uses_it_then_exits(
    server_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    old, _ = ensure_docs_server(idle_s=IDLE_S)
    async with ToolHub.open({"docsearch": mcp_connection(old)}) as hub:
        stale = {**old, "fingerprint": {**old["fingerprint"], "collections": {}}}
        (state_dir() / "state.json").write_text(json.dumps(stale))
        new, started = ensure_docs_server(idle_s=IDLE_S)  # another run after `aisearch index`
        assert started and new["pid"] != old["pid"]
        await asyncio.sleep(2 * RETIRE_S + 1)
        assert alive(old["pid"]), "retired, but its session is open"
        outcome = await hub.call("docsearch.search", {"query": QUESTION}, timeout_s=30)
        assert outcome.ok, outcome.error
    assert await asyncio.to_thread(wait_until, lambda: not alive(old["pid"]), 15), "exits after the run"
    assert read_state()["pid"] == new["pid"]
    stop_docs_server()


@pytest.mark.slow
def test_the_idle_timeout_stops_it(server_env: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    state, started = ensure_docs_server(idle_s=2)
    assert started and alive(state["pid"])
    assert wait_until(lambda: not alive(state["pid"]), 30), "it exits by itself when unused"
    assert docs_server_status()["running"] is False
    again, started = ensure_docs_server(idle_s=IDLE_S)
    assert started and again["pid"] != state["pid"]
    stop_docs_server()


def test_a_start_that_times_out_leaves_no_process(server_env: Path, tmp_path: Path, monkeypatch) -> None:
    from tools.docs_server import DocsServerError

    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    before = server_pids(server_env)
    with pytest.raises(DocsServerError, match="did not answer"):
        ensure_docs_server(idle_s=IDLE_S, start_timeout_s=0)  # spawned, then given up at once
    assert read_state() is None
    assert wait_until(lambda: set(server_pids(server_env)) <= set(before), 10)


# ---- the CLI ---------------------------------------------------------------------------------


def ask(tmp_path: Path, base_url: str, **env: str) -> subprocess.Popen[str]:
    (tmp_path / "config.toml").touch()
    environment = {
        **os.environ,
        "AISEARCH_BASE_URL": base_url,
        "AISEARCH_CLOCK_NOW": FIXED_NOW,
        "AISEARCH_CONFIG": str(tmp_path / "config.toml"),
        "AISEARCH_DB": str(tmp_path / "threads.sqlite"),
        **env,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "-v", "ask", QUESTION],
        env=environment,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_ask_uses_the_server_and_the_next_ask_reuses_it(
    server_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    with fake_openai(RULES) as endpoint:
        try:
            first = ask(tmp_path, endpoint.url)
            out, err = first.communicate(timeout=180)
            assert first.returncode == 0, err
            state = read_state()
            assert state is not None and alive(state["pid"])
            second = ask(tmp_path, endpoint.url)
            out2, err2 = second.communicate(timeout=180)
            assert second.returncode == 0, err2
            assert read_state()["pid"] == state["pid"], "the second run reused the server"
        finally:
            stop_docs_server()
    for text, log in ((out, err), (out2, err2)):
        assert "docsearch.search" in text and "Kestrel Bridge" in text and "1932" in text
        assert "Traceback" not in log
    assert f"{state['url']}/embed" in err2, "the route classifier embedded through the server"
    assert "loaded all-MiniLM-L6-v2" not in err2, "the CLI process loaded no embedding model"


@pytest.mark.slow
def test_ask_falls_back_to_a_one_off_server_when_it_cannot_start(server_env: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("the cache directory cannot be created here")
    with fake_openai(RULES) as endpoint:
        run = ask(tmp_path, endpoint.url, AISEARCH_CACHE_DIR=str(blocked))
        out, err = run.communicate(timeout=180)
    assert run.returncode == 0, err
    assert "document server unavailable" in out and "docsearch starts for this run only" in out
    assert "docsearch.search" in out and "Kestrel Bridge" in out, "answered through the stdio docsearch"
    assert "Traceback" not in err


@pytest.mark.slow
def test_ctrl_c_while_it_starts_leaves_no_server(server_env: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = set(server_pids(server_env))
    with fake_openai(RULES) as endpoint:
        run = ask(tmp_path, endpoint.url, AISEARCH_CACHE_DIR=str(cache))
        assert wait_until(lambda: set(server_pids(server_env)) - before, 60, 0.05), "the server was spawned"
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err

    def recorded() -> set[int]:  # a start that won the race with the Ctrl-C is recorded, not orphaned
        return {json.loads(path.read_text())["pid"] for path in cache.glob("docs-server/*/state.json")}

    assert wait_until(lambda: set(server_pids(server_env)) - before <= recorded(), 15), "no unrecorded server"
    for pid in recorded():
        os.kill(pid, signal.SIGTERM)
