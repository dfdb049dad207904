"""``aisearch ask`` end to end as a subprocess against a scripted OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bench.soak import processes
from tests.conftest import FIXED_NOW, REPO
from tests.support.fake_openai import fake_openai
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, WRITER, assessment

RULES = [
    ("Question: When was he born", assessment("simple", resolved="When was Emperor Wu of Han born?")),
    (MASTER, assessment("moderate", resolved="What time is it in Tokyo now?", intent="current time")),
    (EXEC_ARGS, {"timezone": "Asia/Tokyo"}),
    (EXEC_JUDGE, {"sufficient": True, "result": "18:00 in Tokyo"}),
    ("When was he born", "Emperor Wu of Han was born in 156 BC."),
    ("say why", "The clock server says so [1]."),  # the Writer's second turn: the reasons
    (WRITER, "18:00"),
]


def cli_env(base_url: str, tmp_path) -> dict[str, str]:
    """The environment of a CLI run against ``base_url`` with its state under ``tmp_path``.

    Its tool listings too: no server is known before its first run, so the bundled ``python`` and
    ``clock`` start with the run (later runs of the same test start them only when selected).
    """
    (tmp_path / "config.toml").touch()
    return {
        **os.environ,
        "AISEARCH_BASE_URL": base_url,
        "AISEARCH_CLOCK_NOW": FIXED_NOW,
        "AISEARCH_CONFIG": str(tmp_path / "config.toml"),
        "AISEARCH_DB": str(tmp_path / "threads.sqlite"),
        "AISEARCH_TOOLS_DIR": str(tmp_path / "tools"),
    }


def aisearch(*args: str, base_url: str, tmp_path, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=cli_env(base_url, tmp_path),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_ask_streams_progress_then_the_cited_answer(tmp_path) -> None:
    with fake_openai(RULES) as server:
        done = aisearch("ask", "What time is it in Tokyo now?", base_url=server.url, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "route executor" in out and "clock.now" in out
    assert "▶ t1" in out and "■ t1 ok" in out
    assert "answer\n18:00\nThe clock server says so [1]." in out, "the short answer first, its reasons below"
    assert "[1] clock.now" in out and "mcp://clock/now" in out
    assert out.index("route") < out.index("▶ t1") < out.index("18:00\nThe clock")


@pytest.mark.slow
def test_json_output_and_a_follow_up_on_the_same_thread(tmp_path) -> None:
    with fake_openai(RULES) as server:
        first = aisearch(
            "ask", "What time is it in Tokyo now?", "--json", base_url=server.url, tmp_path=tmp_path
        )
        assert first.returncode == 0, first.stderr
        state = json.loads(first.stdout)
        assert state["route"] == "executor"
        assert state["answer"]["citations"][0]["evidence_id"] in state["evidence"]
        second = aisearch(
            "ask",
            "When was he born?",
            "--json",
            "--thread",
            state["thread_id"],
            base_url=server.url,
            tmp_path=tmp_path,
        )
    assert second.returncode == 0, second.stderr
    follow = json.loads(second.stdout)
    assert follow["thread_id"] == state["thread_id"]
    assert follow["assessment"]["resolved_query"] == "When was Emperor Wu of Han born?"
    assert any("User: What time is it in Tokyo now?" in p for p in server.prompts if "When was he born" in p)


@pytest.mark.slow
def test_unknown_thread_and_unreachable_endpoint_are_clear_errors(tmp_path) -> None:
    with fake_openai(RULES) as server:
        unknown = aisearch("ask", "hello", "--thread", "nope", base_url=server.url, tmp_path=tmp_path)
    assert unknown.returncode == 2 and "unknown thread id 'nope'" in unknown.stderr
    dead = aisearch("ask", "hello", base_url="http://127.0.0.1:9/v1", tmp_path=tmp_path)
    assert dead.returncode == 2
    assert "cannot reach the master model endpoint http://127.0.0.1:9/v1" in dead.stderr
    assert "Traceback" not in dead.stderr


def children(pid: int) -> set[int]:
    """Pids of the live processes whose parent is ``pid``."""
    return {proc.pid for proc in processes() if proc.ppid == pid}


def alive(pid: int) -> bool:
    return any(proc.pid == pid for proc in processes())


@pytest.mark.slow
def test_ctrl_c_during_a_model_call_ends_the_run_and_its_mcp_servers(tmp_path) -> None:
    """A terminal's Ctrl-C (SIGINT to the foreground process group) while the model is thinking."""
    with fake_openai(RULES, delay_s=120) as server:
        run = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "ask", "What time is it in Tokyo now?"],
            env=cli_env(server.url, tmp_path),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + 90
        while not server.prompts and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.prompts, "the run reached the model"
        servers = children(run.pid)
        assert servers, "the MCP servers of the run were started"
        os.killpg(run.pid, signal.SIGINT)
        _, err = run.communicate(timeout=60)  # well before the slow model would answer
    assert run.returncode == 130 and "Traceback" not in err, err
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in servers if alive(pid)], "no MCP server outlives the run"


@pytest.mark.slow
def test_the_readme_wrapper_keeps_stdout_for_the_command(tmp_path) -> None:
    """``./aisearch`` runs the set-up first; its progress goes to stderr so ``--json`` stays parseable."""
    done = subprocess.run(
        [str(REPO / "aisearch"), "tools", "list", "--json"],
        env=cli_env("http://127.0.0.1:9/v1", tmp_path),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "bootstrap" in done.stderr  # the set-up ran, and said so where a person reads it
    assert {entry["server"] for entry in json.loads(done.stdout)} >= {"python", "clock"}
