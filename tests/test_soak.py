"""The soak benchmark's short variant: questions in a row through the real CLI, scripted endpoint."""

from __future__ import annotations

import os

import pytest

from bench.soak import markdown, memory_by_kind, processes, run
from tests.support.fake_openai import fake_openai
from tests.test_cli import RULES, cli_env


@pytest.mark.slow
def test_questions_in_a_row_leave_nothing_behind_and_are_sampled(tmp_path) -> None:
    with fake_openai(RULES) as server:
        env = cli_env(server.url, tmp_path) | {"AISEARCH_DOCSEARCH_DEFAULT_BUILD": "0"}
        report = run(["What time is it in Tokyo now?"] * 2, env, sample_s=0.2, timeout_s=120)

    assert (report["questions"], report["errors"], report["tracebacks"]) == (2, 0, 0)
    assert report["leftover_processes"] == 0
    assert all(row["answered"] for row in report["rows"])
    assert {s["q"] for s in report["samples"]} >= {1, 2}
    assert report["ask_peak_mib"] > 20, "the ask process and its MCP servers were measured"
    assert "leftover processes: 0" in markdown(report)


def test_memory_is_attributed_to_the_run_that_owns_it() -> None:
    procs = processes()
    mine = memory_by_kind(procs, ask_pid=os.getpid())
    assert mine["ask"] > 0, "this process counts as the run"
    assert memory_by_kind(procs, ask_pid=None)["ask"] == 0


def test_llama_servers_router_and_models_count_as_the_model_server() -> None:
    from bench.soak import MODEL_SERVER_CONFIG, Proc

    launcher = Proc(10, 1, 10, 50.0, f"python -m models.llama_server_launcher --config {MODEL_SERVER_CONFIG}")
    router = Proc(11, 10, 10, 20.0, "llama-server --models-preset models.ini")
    instance = Proc(12, 11, 10, 900.0, "llama-server --model small.gguf")
    mcp = Proc(21, 20, 20, 40.0, "python -m tools.servers.clock_server")
    ask = Proc(20, 1, 20, 100.0, "aisearch ask")
    totals = memory_by_kind([launcher, router, instance, mcp, ask], ask_pid=20)
    assert totals == {"ask": 140.0, "model_server": 970.0, "docs_server": 0.0}
