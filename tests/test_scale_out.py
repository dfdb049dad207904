"""The scale-out runtime on one machine, every piece real: ``aisearch serve --workers 2`` over a
throwaway Postgres (threads and the one-run-per-thread locks), a ``chroma run`` server holding the
document index, and the scripted OpenAI-compatible endpoint as the model tier.

What it shows: requests land on both workers; a thread started on one worker continues on the
other; two runs on one thread give one 409 even when they reach different workers; a search
answer cites passages the chroma server holds; nothing is left running afterwards.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import HTTPException

from app.serve_workers import WORKER_HEADER, worker_environment
from app.thread_locks import PostgresThreadClaims, lock_key
from bench.soak import processes
from models.server_process import free_port
from tests.conftest import REPO
from tests.support.fake_openai import fake_openai
from tests.support.fakes import EXEC_ARGS, EXEC_JUDGE, MASTER, WRITER, assessment
from tests.support.postgres import throwaway_postgres
from tests.support.postgres import unavailable as postgres_unavailable
from tests.support.processes import stop_process
from tests.test_http_api import TOKYO, Served, ask, serve_env, sse_events
from tools.index.chroma_client import CHROMA_URL_ENV, server_address
from tools.index.errors import IndexUserError

KESTREL = "When did the Kestrel Bridge open?"
KESTREL_RESOLVED = "In which year did the Kestrel Bridge open?"
RULES = [  # first match wins; the Writer's prompt holds the question too, with "(meaning: …)"
    ("Question: When was he born", assessment("simple", resolved="When was Emperor Wu of Han born?")),
    ("say why", "The first source says so [1]."),  # the Writer's second turn
    (f"(meaning: {KESTREL_RESOLVED})", "1932"),
    (f"Question: {KESTREL}", assessment("moderate", "direct", resolved=KESTREL_RESOLVED)),
    (MASTER, assessment("moderate", resolved=TOKYO, intent="current time")),
    (EXEC_ARGS, {"timezone": "Asia/Tokyo"}),
    (EXEC_JUDGE, {"sufficient": True, "result": "18:00 in Tokyo"}),
    ("When was he born", "Emperor Wu of Han was born in 156 BC."),
    (WRITER, "18:00"),
]
DELAY_S = 0.4
"""Every scripted model call waits this long: a turn (about five calls) holds its thread ~2 s."""
TRIES = 12
START_TIMEOUT_S = 300
"""Two workers each load the embedder (docsearch) and start their MCP servers: minutes on a busy 2-core machine."""


def test_a_chroma_url_must_name_a_server() -> None:
    assert server_address("http://127.0.0.1:8123") == ("127.0.0.1", 8123, False)
    assert server_address("https://chroma.internal") == ("chroma.internal", 443, True)
    assert server_address("http://chroma") == ("chroma", 8000, False)
    for bad in ("127.0.0.1:8000", "ftp://host", "http://host:8000/api/v2"):
        with pytest.raises(IndexUserError, match=CHROMA_URL_ENV):
            server_address(bad)


def test_the_workers_get_the_commands_options_through_the_environment() -> None:
    env = worker_environment(db="postgresql://u@h/db", mcp_config="~/mcp.json", max_body_bytes=10)
    assert env["AISEARCH_DB"] == "postgresql://u@h/db"
    assert env["AISEARCH_MCP_CONFIG"] == str(Path("~/mcp.json").expanduser())
    assert env["AISEARCH_MAX_BODY_BYTES"] == "10" and "AISEARCH_CONFIG" not in env


def test_several_workers_need_the_threads_in_postgres(tmp_path: Path) -> None:
    env = serve_env("http://127.0.0.1:9/v1", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--workers", "2", "--port", str(free_port())],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--workers 2 needs the threads in Postgres" in done.stderr


def _locked_elsewhere(url: str, thread_id: str) -> bool:
    """Whether a session other than a new one holds ``thread_id``'s lock (the new one lets go)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        key = lock_key(thread_id)
        if connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
            return False
        return True


def test_claims_hold_across_connections_and_outlive_a_dropped_one(database: str) -> None:
    import psycopg

    first, second = PostgresThreadClaims(url=database), PostgresThreadClaims(url=database)
    first.connect()
    second.connect()
    try:
        first.take("thread-a")
        assert second.held("thread-a") and not second.held("thread-b")
        with pytest.raises(HTTPException) as refused:
            second.take("thread-a")
        assert refused.value.status_code == 409
        with psycopg.connect(database, autocommit=True) as admin:  # the server drops first's session
            admin.execute("SELECT pg_terminate_backend(%s)", (first._connection.info.backend_pid,))
        first.take("thread-b")  # reconnects, and takes thread-a's lock again on the new session
        assert _locked_elsewhere(database, "thread-a") and _locked_elsewhere(database, "thread-b")
        first.release("thread-a")
        assert not second.held("thread-a")
        second.take("thread-a")
    finally:
        first.close()
        second.close()
    assert not _locked_elsewhere(database, "thread-b"), "closing the connection let go of its locks"


@dataclass
class ChromaServer:
    """A ``chroma run`` server on a free loopback port."""

    process: subprocess.Popen
    url: str


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A chroma server with its data in a temporary folder (skipped when ``chroma`` is missing)."""
    chroma = Path(sys.executable).with_name("chroma")
    if not chroma.exists():
        pytest.skip("no chroma CLI beside this Python (chromadb's server)")
    root = tmp_path_factory.mktemp("chroma")
    port = free_port()
    with open(root / "chroma.log", "w") as log:
        process = subprocess.Popen(
            [str(chroma), "run", "--path", str(root / "data"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (root / "chroma.log").read_text()[-2000:]
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the chroma server did not start"
            time.sleep(0.2)
        yield ChromaServer(process, url)
    finally:
        stop_process(process)


@pytest.fixture(scope="module")
def remote_index(chroma_server: ChromaServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture corpus indexed as collection 'docs' into the chroma server; the index directory
    keeps only the collection's own files."""
    from tools.index.ingest import index_paths
    from tools.index.store import IndexStore

    root = tmp_path_factory.mktemp("remote-index")
    shutil.copytree(REPO / "tests" / "fixtures" / "docs", root / "docs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CHROMA_URL_ENV, chroma_server.url)
        index_paths([root / "docs"], "docs", store=IndexStore(root / "index"))
    assert not (root / "index" / "chroma").exists(), "no embedded chromadb: the vectors are in the server"
    return root / "index"


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    """A throwaway Postgres for the threads and their locks (skipped, with the reason, without one)."""
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    with throwaway_postgres() as url:
        yield url


@pytest.fixture(scope="module")
def workers(
    database: str, chroma_server: ChromaServer, remote_index: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """``aisearch serve --workers 2`` against the Postgres, the chroma server and a slow scripted
    endpoint; every process it started must be gone once it stops."""
    root = tmp_path_factory.mktemp("workers")
    with fake_openai(RULES, delay_s=DELAY_S) as endpoint:
        env = serve_env(
            endpoint.url,
            root,
            AISEARCH_DB=database,
            AISEARCH_INDEX_DIR=str(remote_index),
            AISEARCH_DOCS_SERVER="0",  # docsearch over stdio in each worker: nothing outlives the test
            **{CHROMA_URL_ENV: chroma_server.url},
        )
        server = Served(env, root / "serve.log", start_timeout_s=START_TIMEOUT_S)
        started: set[int] = set()
        try:
            server.start("--workers", "2")
            assert server.process is not None
            started = _both_workers_up(server)
            yield server
            started |= _descendants(server.process.pid)
        finally:
            server.stop()  # also when the start failed: nothing of it keeps running
        # what exits as its parent goes (multiprocessing's resource tracker reads EOF) gets a moment
        deadline = time.monotonic() + 10
        while (left := [f"{p.pid} {p.cmdline}" for p in processes() if p.pid in started]) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert not left, f"processes left behind: {left}"


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (workers, their MCP servers, …)."""
    children: dict[int, set[int]] = {}
    for proc in processes():
        children.setdefault(proc.ppid, set()).add(proc.pid)
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.add(child)
            todo.append(child)
    return found


def _both_workers_up(server: Served) -> set[int]:
    """Wait until both workers answer ``/health``; the server's processes then."""
    assert server.process is not None
    seen: set[int] = set()
    deadline = time.monotonic() + START_TIMEOUT_S
    while len(seen) < 2:
        assert server.process.poll() is None, "the server exited:\n" + server.log_path.read_text()[-3000:]
        assert time.monotonic() < deadline, (
            f"only workers {seen} answered:\n" + server.log_path.read_text()[-3000:]
        )
        try:
            response = httpx.get(f"{server.url}/health", timeout=5)
        except httpx.HTTPError:
            continue
        if response.status_code == 200:
            body = response.json()
            assert body["mcp_servers"].get("docsearch") == "ok", body
            seen.add(body["worker_pid"])
            assert response.headers[WORKER_HEADER] == str(body["worker_pid"])
        time.sleep(0.05)
    workers = {proc.pid for proc in processes() if proc.ppid == server.process.pid}
    assert seen <= workers, "the pids are the serve process's own workers"
    return _descendants(server.process.pid)


def _worker(response: httpx.Response) -> int:
    return int(response.headers[WORKER_HEADER])


@pytest.mark.slow
def test_concurrent_requests_land_on_both_workers(workers: Served) -> None:
    seen: set[int] = set()
    with ThreadPoolExecutor(6) as pool:
        for _ in range(3):  # a worker may accept a whole burst: a few bursts at most
            responses = list(pool.map(lambda _: workers.post("/invoke", ask(TOKYO)), range(6)))
            assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
            assert all(r.json()["output"]["answer"]["short"] == "18:00" for r in responses)
            seen |= {_worker(r) for r in responses}
            if len(seen) == 2:
                break
    assert len(seen) == 2, f"every request went to worker {seen}"


@pytest.mark.slow
def test_a_thread_started_on_one_worker_continues_on_the_other(workers: Served) -> None:
    first = workers.post("/invoke", ask(TOKYO))
    thread, origin = first.json()["metadata"]["thread_id"], _worker(first)
    turns = 1
    for _ in range(TRIES):
        # sent beside unrelated requests: alone, one idle worker may win every accept in a row
        with ThreadPoolExecutor(4) as pool:
            beside = [pool.submit(workers.post, "/invoke", ask(TOKYO)) for _ in range(3)]
            follow = workers.post(f"/conversations/{thread}/invoke", ask("When was he born?"))
            assert all(f.result().status_code == 200 for f in beside)
        assert follow.status_code == 200, follow.text
        turns += 1
        if _worker(follow) != origin:
            break
    else:
        pytest.fail(f"every turn went to worker {origin}")
    output = follow.json()["output"]
    assert output["assessment"]["resolved_query"] == "When was Emperor Wu of Han born?"
    state = workers.get(f"/conversations/{thread}/state").json()
    humans = [m["content"] for m in state["values"]["messages"] if m["type"] == "human"]
    assert humans == [TOKYO] + ["When was he born?"] * (turns - 1), "every turn, once, in order"
    assert len(state["values"]["messages"]) == 2 * turns


@pytest.mark.slow
def test_two_runs_on_one_thread_give_one_409_across_workers(workers: Served, database: str) -> None:
    import psycopg

    thread = workers.post("/invoke", ask(TOKYO)).json()["metadata"]["thread_id"]
    with httpx.stream(
        "POST", f"{workers.url}/conversations/{thread}/stream", json=ask(TOKYO), timeout=60
    ) as running:
        holder = _worker(running)
        events = sse_events(running)
        assert next(events)[0] == "metadata"  # the run holds the thread now
        with psycopg.connect(database, autocommit=True) as connection:
            taken = connection.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(thread),)).fetchone()
            assert taken == (False,), "the thread's lock is held in Postgres, for every process to see"
        refused_by: set[int] = set()
        for _ in range(TRIES):
            second = workers.post(f"/conversations/{thread}/invoke", ask(TOKYO))
            assert second.status_code == 409 and "in progress" in second.text, second.text
            refused_by.add(_worker(second))
            state = workers.get(f"/conversations/{thread}/state")
            assert state.json()["busy"] is True, f"worker {_worker(state)} sees the run of worker {holder}"
            if refused_by - {holder}:
                break
        assert refused_by - {holder}, f"every second request went to the running worker {holder}"
        kinds = [data["event"] for event, data in events if event == "data"]
    assert kinds[-1] == "answer", "the first run went on to its answer"
    again = workers.post(f"/conversations/{thread}/invoke", ask(TOKYO))
    assert again.status_code == 200, "the lock went with the run"


@pytest.mark.slow
def test_a_search_answer_cites_passages_from_the_chroma_server(
    workers: Served, chroma_server: ChromaServer
) -> None:
    import chromadb

    response = workers.post("/invoke", ask(KESTREL))
    assert response.status_code == 200, response.text
    output = response.json()["output"]
    assert output["answer"]["short"] == "1932"
    citations = output["answer"]["citations"]
    assert citations and all(c["kind"] == "document" for c in citations), citations
    assert citations[0]["title"] == "Kestrel Bridge"
    passages = [c["evidence_id"] for c in citations]
    assert all(output["evidence"][p]["kind"] == "document" for p in passages)
    host, port, _ = server_address(chroma_server.url)
    stored = chromadb.HttpClient(host=host, port=port).get_collection("docs").get(ids=passages)
    assert sorted(stored["ids"]) == sorted(set(passages)), "every cited passage is in the chroma server"
    assert any("1932" in text for text in stored["documents"])
