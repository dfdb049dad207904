"""``langgraph dev`` serves the exported graph; a run through its HTTP API answers (Studio's backend)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from models.server_process import free_port
from tests.conftest import FIXED_NOW, REPO
from tests.support.fake_openai import fake_openai
from tests.support.fakes import MASTER, WRITER, assessment
from tests.support.processes import stop_process

pytestmark = pytest.mark.server
LANGGRAPH = Path(sys.executable).with_name("langgraph")


@pytest.mark.skipif(
    not LANGGRAPH.exists() and not shutil.which("langgraph"),
    reason="langgraph CLI not installed (pip install 'langgraph-cli[inmem]')",
)
async def test_langgraph_dev_serves_the_graph_and_answers(tmp_path) -> None:
    from langgraph_sdk import get_client

    rules = [
        (MASTER, assessment("simple", resolved="What is the name of Emperor Han-Wu?")),
        (WRITER, "The name of Emperor Han-Wu is Liu Che."),
    ]
    port = free_port()
    with fake_openai(rules) as server:
        (tmp_path / "config.toml").touch()
        env = {
            **os.environ,
            "AISEARCH_BASE_URL": server.url,
            "AISEARCH_CLOCK_NOW": FIXED_NOW,
            "AISEARCH_CONFIG": str(tmp_path / "config.toml"),
            "LANGSMITH_TRACING": "false",
            "AISEARCH_DB": str(tmp_path / "threads.sqlite"),
        }
        command = [
            str(LANGGRAPH) if LANGGRAPH.exists() else "langgraph",
            "dev",
            "--no-browser",
            "--no-reload",
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
        ]
        log = open(tmp_path / "dev.log", "w")  # noqa: SIM115 - closed below
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.5)
            else:
                pytest.fail("langgraph dev did not start:\n" + (tmp_path / "dev.log").read_text()[-3000:])
            client = get_client(url=url)
            (assistant,) = await client.assistants.search(graph_id="aisearch")
            thread = await client.threads.create()
            result = await client.runs.wait(
                thread["thread_id"],
                assistant["assistant_id"],
                input={"query": "What is the name of Emperor Han-Wu?"},
            )
            assert result["route"] == "writer_only"
            assert result["answer"]["text"] == "The name of Emperor Han-Wu is Liu Che."
            # the HTTP app (langgraph.json http.app) is mounted beside LangGraph Server's routes
            served = httpx.post(
                f"{url}/invoke", json={"input": {"query": "What is the name of Emperor Han-Wu?"}}, timeout=60
            )
            assert served.status_code == 200, served.text
            assert served.json()["output"]["answer"]["text"] == "The name of Emperor Han-Wu is Liu Che."
            thread_id = served.json()["metadata"]["thread_id"]
            assert (
                httpx.get(f"{url}/conversations/{thread_id}/state").json()["values"]["route"] == "writer_only"
            )
            assert (await client.threads.get_state(thread["thread_id"]))["values"][
                "route"
            ] == "writer_only", "LangGraph Server's own thread routes are not shadowed"
        finally:
            stop_process(process, timeout_s=20)
            log.close()
