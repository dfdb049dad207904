"""``aisearch serve`` end to end: a real uvicorn server on loopback, a real HTTP client, the
scripted OpenAI-compatible endpoint behind it, threads in a SQLite file that outlives the server
(and, where a Postgres server is installed, in a throwaway Postgres)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.server import ServeError, start_serve, stop_serve
from bench.soak import processes
from tests.conftest import FIXED_NOW
from tests.support.fake_openai import fake_openai
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, WRITER, assessment
from tests.support.langserve_client import client_python, run_client
from tests.support.postgres import throwaway_postgres
from tests.support.postgres import unavailable as postgres_unavailable

TOKYO = "What time is it in Tokyo now?"
RULES = [
    ("Question: When was he born", assessment("simple", resolved="When was Emperor Wu of Han born?")),
    ("Break the models", 500),  # every model call of this query fails
    (MASTER, assessment("moderate", resolved=TOKYO, intent="current time")),
    (EXEC_ARGS, {"timezone": "Asia/Tokyo"}),
    (EXEC_JUDGE, {"sufficient": True, "result": "18:00 in Tokyo"}),
    ("When was he born", "Emperor Wu of Han was born in 156 BC."),
    ("say why", "The clock server says so [1]."),  # the Writer's second turn: the reasons
    (WRITER, "18:00"),
]
MAX_BODY = 4096


@dataclass
class Served:
    """One ``aisearch serve`` subprocess on a free loopback port."""

    base_env: dict[str, str]
    log_path: Path
    url: str = ""
    process: subprocess.Popen | None = None
    headers: dict[str, str] = field(default_factory=dict)
    start_timeout_s: float = 90

    def start(self, *extra_args: str, **env: str) -> None:
        try:
            self.process, self.url = start_serve(
                {**self.base_env, **env}, self.log_path, *extra_args, timeout_s=self.start_timeout_s
            )
        except ServeError as exc:
            pytest.fail(str(exc))

    def stop(self) -> None:
        if self.process is not None:
            stop_serve(self.process, timeout_s=20)
            self.process = None

    def post(self, path: str, body: Any, **kwargs: Any) -> httpx.Response:
        return httpx.post(f"{self.url}{path}", json=body, headers=self.headers, timeout=60, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", headers=self.headers, timeout=60, **kwargs)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[Any]:
    """The scripted model endpoint all servers of this module talk to."""
    with fake_openai(RULES) as server:
        yield server


def serve_env(base_url: str, root: Path, **extra: str) -> dict[str, str]:
    """The environment of a server against ``base_url``, its state under ``root``, auth off."""
    (root / "config.toml").touch()
    env = {
        **os.environ,
        "AISEARCH_BASE_URL": base_url,
        "AISEARCH_CLOCK_NOW": FIXED_NOW,
        "AISEARCH_CONFIG": str(root / "config.toml"),
        "AISEARCH_DB": str(root / "threads.sqlite"),
        "AISEARCH_ROUTING": "llm",
        "AISEARCH_TOOLS_DIR": str(root / "tools"),  # no listing known: python and clock start with the run
        **extra,
    }
    env.pop("AISEARCH_HTTP_TOKEN", None)
    return env


@pytest.fixture(scope="module")
def served(endpoint: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with auth off and a small body limit, its threads in a temporary database."""
    root = tmp_path_factory.mktemp("serve")
    server = Served(serve_env(endpoint.url, root, AISEARCH_MAX_BODY_BYTES=str(MAX_BODY)), root / "serve.log")
    server.start()
    yield server
    server.stop()


def ask(query: str, **configurable: Any) -> dict[str, Any]:
    """A LangServe request body."""
    return {"input": {"query": query}, "config": {"configurable": configurable}, "kwargs": {}}


def sse_events(response: httpx.Response) -> Iterator[tuple[str, Any]]:
    """``(event, data)`` of a server-sent event stream, data parsed as JSON when there is any."""
    event, data = "message", []
    for line in response.iter_lines():
        if not line:
            if data or event != "message":
                text = "\n".join(data)
                yield event, json.loads(text) if text else None
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


@pytest.mark.slow
def test_invoke_answers_with_the_cited_answer_and_a_new_thread(served: Served) -> None:
    response = served.post("/invoke", ask(TOKYO))
    assert response.status_code == 200, response.text
    body = response.json()
    output, metadata = body["output"], body["metadata"]
    assert output["route"] == "executor"
    assert output["answer"]["short"] == "18:00"
    assert output["answer"]["citations"][0]["source"] == "mcp://clock/now"
    assert metadata["thread_id"] and metadata["run_id"]


@pytest.mark.slow
def test_stream_sends_route_plan_tasks_tokens_answer_then_end(served: Served) -> None:
    with httpx.stream("POST", f"{served.url}/stream", json=ask(TOKYO), timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(response))
    names = [event for event, _ in events]
    assert names[0] == "metadata" and names[-1] == "end" and "error" not in names
    kinds = [data["event"] for event, data in events if event == "data"]
    for kind in ("route", "plan", "task_start", "task_end", "token", "answer"):
        assert kind in kinds, kinds
    order = [kinds.index(k) for k in ("route", "plan", "task_start", "task_end", "token", "answer")]
    assert order == sorted(order), kinds
    assert kinds[-1] == "answer"
    answer = events[-2][1]["answer"]
    assert answer["short"] == "18:00" and answer["citations"]
    tokens = "".join(data["text"] for event, data in events if event == "data" and data["event"] == "token")
    assert "18:00" in tokens


@pytest.mark.slow
def test_stream_events_is_langchains_event_stream(served: Served) -> None:
    with httpx.stream("POST", f"{served.url}/stream_events", json=ask(TOKYO), timeout=60) as response:
        events = list(sse_events(response))
    data = [d for event, d in events if event == "data"]
    assert events[-1][0] == "end"
    assert data[0]["event"] == "on_chain_start"
    assert {"master", "writer"} <= {d["name"] for d in data if d["event"] == "on_chain_end"}
    assert any(d["event"] == "on_chat_model_stream" for d in data)


@pytest.mark.slow
def test_langserves_own_client_drives_the_routes(served: Served) -> None:
    python = client_python()
    if isinstance(python, str):
        pytest.skip(python)
    result = run_client(python, served.url, TOKYO)
    assert result["invoke"]["answer"]["short"] == "18:00"
    assert result["invoke"]["answer"]["citations"][0]["source"] == "mcp://clock/now"
    assert [out["answer"]["short"] for out in result["batch"]] == ["18:00", "18:00"]
    kinds = [chunk["event"] for chunk in result["stream"]]
    assert kinds[0] == "route" and kinds[-1] == "answer" and "token" in kinds
    assert result["stream"][-1]["answer"]["short"] == "18:00"
    names = {name for _, name in result["stream_events"]}
    assert names == {"writer", "master"}, "the client's include_names filter applied"
    assert ["on_chain_start", "writer"] in result["stream_events"]
    assert "422" in result["empty_query_error"] and "the query is empty" in result["empty_query_error"]
    state = served.get("/conversations/langserve-client-thread/state")
    assert state.status_code == 200, "the client's thread_id reached the checkpointer"


def test_batch_answers_each_input_on_its_own_thread(served: Served) -> None:
    response = served.post("/batch", {"inputs": [{"query": TOKYO}, {"query": TOKYO}]})
    assert response.status_code == 200, response.text
    body = response.json()
    assert [o["answer"]["short"] for o in body["output"]] == ["18:00", "18:00"]
    assert len(set(body["metadata"]["thread_ids"])) == 2


def test_schemas(served: Served) -> None:
    assert served.get("/input_schema").json()["required"] == ["query"]
    output = served.get("/output_schema").json()
    assert {"route", "answer", "evidence"} <= set(output["properties"])
    assert "short" in output["$defs"]["Answer"]["properties"]
    config = served.get("/config_schema").json()
    configurable = config["$defs"]["Configurable"]["properties"]
    assert {"thread_id", "routing", "budgets"} <= set(configurable)
    assert "/invoke" in served.get("/openapi.json").json()["paths"]
    assert served.get("/docs").status_code == 200


@pytest.mark.slow
def test_a_thread_continues_and_its_state_and_history_read_back(served: Served) -> None:
    first = served.post("/invoke", ask(TOKYO)).json()
    thread = first["metadata"]["thread_id"]
    second = served.post(f"/conversations/{thread}/invoke", ask("When was he born?"))
    assert second.status_code == 200, second.text
    assert second.json()["output"]["assessment"]["resolved_query"] == "When was Emperor Wu of Han born?"
    assert second.json()["metadata"]["thread_id"] == thread
    state = served.get(f"/conversations/{thread}/state").json()
    messages = [(m["type"], m["content"]) for m in state["values"]["messages"]]
    assert messages[0] == ("human", TOKYO) and messages[2] == ("human", "When was he born?")
    assert len(messages) == 4 and state["busy"] is False and state["next"] == []
    history = served.get(f"/conversations/{thread}/history", params={"limit": 200}).json()["checkpoints"]
    assert [c["source"] for c in history].count("input") == 2, "one input checkpoint per turn"
    assert history[0]["checkpoint_id"] == state["checkpoint_id"], "newest first"
    with_values = served.get(f"/conversations/{thread}/history", params={"limit": 1, "values": "true"}).json()
    assert with_values["checkpoints"][0]["values"]["query"] == "When was he born?"
    by_config = served.post("/invoke", ask("When was he born?", thread_id=thread)).json()
    assert by_config["metadata"]["thread_id"] == thread, "a thread id in config.configurable continues it"


def test_bad_requests_get_clear_4xx(served: Served) -> None:
    malformed = httpx.post(
        f"{served.url}/invoke", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert malformed.status_code == 422
    empty = served.post("/invoke", ask("  \x00 "))
    assert empty.status_code == 422 and "the query is empty" in empty.text
    assert empty.json()["detail"][0]["loc"] == ["body", "input", "query"]
    assert served.post("/invoke", {"query": TOKYO}).status_code == 422, "the input object is required"
    typo = served.post("/invoke", ask(TOKYO, thred_id="x"))
    assert typo.status_code == 422 and "thred_id" in typo.text
    budget = served.post("/invoke", ask(TOKYO, budgets={"max_replans": -1}))
    assert budget.status_code == 422 and "max_replans" in budget.text
    assert served.get("/conversations/no-such-thread/state").status_code == 404
    assert served.get("/conversations/no-such-thread/history").status_code == 404
    unknown = served.post("/conversations/no-such-thread/invoke", ask(TOKYO))
    assert unknown.status_code == 404 and "unknown thread id 'no-such-thread'" in unknown.text
    assert served.post("/conversations/no-such-thread/stream", ask(TOKYO)).status_code == 404
    assert served.get("/conversations/bad%20id/state").status_code == 422
    big = served.post("/invoke", ask("x " * MAX_BODY))
    assert big.status_code == 413 and f"{MAX_BODY} bytes" in big.text
    chunked = httpx.post(  # no content-length: counted while read
        f"{served.url}/invoke",
        content=iter([json.dumps(ask("x " * MAX_BODY)).encode()]),
        headers={"content-type": "application/json"},
    )
    assert chunked.status_code == 413
    assert served.post("/batch", {"inputs": []}).status_code == 422


def test_a_failing_model_endpoint_gives_an_answer_that_says_so(served: Served) -> None:
    response = served.post("/invoke", ask("Break the models, please"))
    assert response.status_code == 200, response.text
    answer = response.json()["output"]["answer"]
    assert "the model endpoint answered HTTP 500" in answer["text"], answer
    assert any("HTTP 500" in item for item in answer["missing"]), answer
    assert "Traceback" not in response.text


def _children(pid: int) -> set[int]:
    """Ids of the live direct children of ``pid`` (read from ``/proc``)."""
    return {proc.pid for proc in processes() if proc.ppid == pid}


def _wait_idle(served: Served) -> None:
    deadline = time.monotonic() + 60
    while served.get("/health").json()["busy_threads"]:
        assert time.monotonic() < deadline, "a cancelled run still holds its thread"
        time.sleep(0.1)


@pytest.fixture
def slow_served(tmp_path: Path) -> Iterator[Served]:
    """A server whose model answers each call after a second: a run holds its thread a while."""
    with fake_openai(RULES, delay_s=1.0) as slow:
        server = Served(serve_env(slow.url, tmp_path), tmp_path / "serve.log")
        server.start()
        yield server
        server.stop()


@pytest.mark.slow
def test_one_run_per_thread_and_a_client_that_disconnects_mid_stream(slow_served: Served) -> None:
    served = slow_served
    assert served.process is not None
    thread = served.post("/invoke", ask(TOKYO)).json()["metadata"]["thread_id"]
    children = _children(served.process.pid)
    with httpx.stream(
        "POST", f"{served.url}/conversations/{thread}/stream", json=ask(TOKYO), timeout=60
    ) as r:
        events = sse_events(r)
        assert next(events)[0] == "metadata"
        assert next(events)[1]["event"] == "route"
        busy = served.post(f"/conversations/{thread}/invoke", ask(TOKYO))
        assert busy.status_code == 409 and "in progress" in busy.text
        configs = [{"configurable": {}}, {"configurable": {"thread_id": thread}}]
        batch = served.post("/batch", {"inputs": [{"query": TOKYO}, {"query": TOKYO}], "config": configs})
        assert batch.status_code == 409, "a batch with a busy thread is refused as a whole"
    # the client left mid-run: the run is cancelled, the thread is free again, nothing leaked
    _wait_idle(served)
    assert served.process.poll() is None
    assert _children(served.process.pid) == children, "no process left behind, none lost"
    again = served.post(f"/conversations/{thread}/invoke", ask(TOKYO))
    assert again.status_code == 200 and again.json()["output"]["answer"]["short"] == "18:00"


@pytest.mark.slow
def test_a_run_past_its_deadline_and_a_run_past_the_limit_get_clear_errors(tmp_path: Path) -> None:
    with fake_openai(RULES, delay_s=1.0) as slow:  # a run takes several seconds
        env = serve_env(slow.url, tmp_path, AISEARCH_RUN_TIMEOUT_S="2.5", AISEARCH_MAX_RUNS="1")
        served = Served(env, tmp_path / "serve.log")
        served.start()
        try:
            late = served.post("/invoke", ask(TOKYO, thread_id="late"))
            assert late.status_code == 504 and "deadline of 2.5 s (AISEARCH_RUN_TIMEOUT_S)" in late.text
            with httpx.stream("POST", f"{served.url}/stream", json=ask(TOKYO), timeout=60) as response:
                events = sse_events(response)
                assert next(events)[0] == "metadata"
                full = served.post("/invoke", ask(TOKYO))  # the stream holds the only run slot
                assert full.status_code == 503 and "AISEARCH_MAX_RUNS" in full.text
                assert full.headers["retry-after"] == "5"
                rest = list(events)
            assert rest[-2][0] == "error" and rest[-2][1]["status_code"] == 504 and rest[-1][0] == "end"
            _wait_idle(served)
            health = served.get("/health").json()
            assert health["runs_in_flight"] == 0 and health["busy_threads"] == 0
            assert served.get("/conversations/late/state").json()["busy"] is False, "the thread is free"
        finally:
            served.stop()


@pytest.mark.slow
def test_threads_survive_a_restart_and_auth_when_a_key_is_set(served: Served, tmp_path: Path) -> None:
    thread = served.post("/invoke", ask(TOKYO)).json()["metadata"]["thread_id"]
    broken = tmp_path / "mcp.json"
    broken.write_text(
        json.dumps({"mcpServers": {"broken": {"command": sys.executable, "args": ["-c", "pass"]}}})
    )
    served.stop()
    try:
        served.start("--mcp-config", str(broken), AISEARCH_HTTP_TOKEN="s3cret", AISEARCH_API_KEY="sk-model")
        health = served.get("/health")
        assert health.status_code == 200, "health needs no token"
        assert health.json()["threads"] == "sqlite" and "threads.sqlite" not in health.text, "no path"
        assert health.json()["mcp_servers"]["clock"] == "ok"
        assert health.json()["mcp_servers"]["broken"] != "ok", "a server that failed is named"
        assert served.get(f"/conversations/{thread}/state").status_code == 401
        served.headers = {"Authorization": "Bearer sk-model"}
        assert served.post("/invoke", ask(TOKYO)).status_code == 401, "a model key is not the API token"
        served.headers = {"Authorization": "Bearer s3cret"}
        state = served.get(f"/conversations/{thread}/state")
        assert state.status_code == 200
        assert state.json()["values"]["answer"]["short"] == "18:00", "the thread outlived the server"
        follow = served.post(f"/conversations/{thread}/invoke", ask("When was he born?"))
        assert follow.status_code == 200, "a broken MCP server does not stop the answers"
        assert follow.json()["output"]["assessment"]["resolved_query"] == "When was Emperor Wu of Han born?"
    finally:
        served.headers = {}
        served.stop()


@pytest.mark.skipif(postgres_unavailable() is not None, reason=str(postgres_unavailable()))
@pytest.mark.slow
def test_threads_in_postgres_survive_a_restart(endpoint: Any, tmp_path: Path) -> None:
    with throwaway_postgres() as url:
        server = Served(serve_env(endpoint.url, tmp_path, AISEARCH_DB=url), tmp_path / "serve.log")
        server.start()
        try:
            assert server.get("/health").json()["threads"] == "postgres"
            thread = server.post("/invoke", ask(TOKYO)).json()["metadata"]["thread_id"]
            server.stop()
            server.start()
            state = server.get(f"/conversations/{thread}/state").json()
            assert state["values"]["answer"]["short"] == "18:00", "the thread outlived the server"
            follow = server.post(f"/conversations/{thread}/invoke", ask("When was he born?")).json()
            assert follow["output"]["assessment"]["resolved_query"] == "When was Emperor Wu of Han born?"
            assert server.get("/conversations/no-such-thread/state").status_code == 404
            import psycopg

            with psycopg.connect(url) as connection:
                stored = connection.execute(
                    "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread,)
                )
                assert stored.fetchone()[0] > 0, "the checkpoints are in Postgres"
        finally:
            server.stop()
