"""``aisearch mcp`` end to end: the real server as a subprocess, the MCP client SDK over stdio and
over streamable HTTP, the scripted OpenAI-compatible endpoint behind it, a real document index of
the fixture corpus, threads in a SQLite file."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench.soak import processes
from models.server_process import free_port
from tests.conftest import REPO
from tests.support.fake_openai import fake_openai
from tests.support.processes import stop_process
from tests.test_cli import alive, children
from tests.test_http_api import RULES, TOKYO, serve_env

FOLLOW_UP = "Emperor Wu of Han was born in 156 BC."
SCRIPT = [("When was Emperor Wu of Han born", FOLLOW_UP), *RULES]  # the Writer reads the resolved query
TIMEOUT = timedelta(seconds=120)
LIGHTHOUSE = "Who built the Harrow Point lighthouse?"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[Any]:
    """The scripted model endpoint the servers of this module talk to."""
    with fake_openai(SCRIPT) as server:
        yield server


def mcp_env(base_url: str, root: Path, index_dir: Path) -> dict[str, str]:
    """The server's environment: the scripted model, threads under ``root``, the index ``index_dir``."""
    return serve_env(base_url, root, AISEARCH_INDEX_DIR=str(index_dir))


def command(root: Path, *args: str) -> list[str]:
    """``aisearch mcp`` with its threads under ``root`` (the path marks the process in ``/proc``)."""
    return [sys.executable, "-m", "app.cli", "mcp", "--db", str(root / "threads.sqlite"), *args]


def server_pid(root: Path) -> int:
    """The pid of the ``aisearch mcp`` whose threads are under ``root``."""
    marker = f"app.cli mcp --db {root / 'threads.sqlite'}"
    found = [proc.pid for proc in processes() if marker in proc.cmdline]
    assert len(found) == 1, found
    return found[0]


def assert_gone(pids: set[int], timeout_s: float = 15) -> None:
    """Every process of ``pids`` exits within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if alive(pid)], "no process outlives the server"


@asynccontextmanager
async def stdio_session(env: dict[str, str], root: Path, *args: str) -> AsyncIterator[ClientSession]:
    """A client session with ``aisearch mcp *args`` over stdio (its stderr in ``root/mcp.log``)."""
    cmd = command(root, *args)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env, cwd=str(REPO))
    with open(root / "mcp.log", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session,
        ):
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    """A client session with the server at ``url`` over streamable HTTP."""
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30, read=120)) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session,
    ):
        await session.initialize()
        yield session


async def check_tools(session: ClientSession) -> None:
    """The two tools, their arguments and their output schemas."""
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {"ask", "search"}
    assert set(tools["ask"].inputSchema["properties"]) == {"query", "thread_id"}
    assert tools["ask"].inputSchema["required"] == ["query"]
    assert set(tools["search"].inputSchema["properties"]) == {"query", "k", "collection"}
    assert {"thread_id", "short", "answer", "sources"} <= set(tools["ask"].outputSchema["properties"])
    assert set(tools["search"].outputSchema["properties"]) == {"query", "collection", "results"}


async def check_search(session: ClientSession) -> None:
    """A hybrid search of the fixture index: passages with id, title, whole text and score."""
    result = await session.call_tool("search", {"query": LIGHTHOUSE, "k": 3})
    assert not result.isError, result.content
    found = result.structuredContent
    assert found["query"] == LIGHTHOUSE and found["collection"] == "docs"
    assert len(found["results"]) == 3
    top = found["results"][0]
    assert top["title"] == "The Harrow Point Lighthouse" and "Miriam Calloway" in top["text"]
    assert "interlocking granite blocks" in top["text"], "the whole passage, not a snippet"
    assert top["id"] and top["score"] > 0 and top["source"].endswith("lighthouse.html")
    assert [r["score"] for r in found["results"]] == sorted(
        (r["score"] for r in found["results"]), reverse=True
    )
    text = result.content[0].text
    assert text.startswith("[1] The Harrow Point Lighthouse (") and f"id {top['id']}" in text


async def check_ask_and_follow_up(session: ClientSession, endpoint: Any) -> None:
    """An answer with its short answer and cited source, progress on the way, then a follow-up."""
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    result = await session.call_tool("ask", {"query": TOKYO}, progress_callback=on_progress)
    assert not result.isError, result.content
    answer = result.structuredContent
    assert answer["short"] == "18:00" and answer["answer"] == "The clock server says so [1]."
    assert answer["route"] == "executor"
    assert answer["sources"][0]["source"] == "mcp://clock/now" and answer["sources"][0]["cited"]
    assert answer["sources"][0]["n"] == 1 and answer["sources"][0]["title"].startswith("clock.now")
    text = result.content[0].text
    assert text.startswith("18:00\nThe clock server says so [1].\n\nSources:\n[1] clock.now")
    assert f"thread_id: {answer['thread_id']}" in text
    assert progress[0] == "route executor" and progress[-1] == "answer written"
    assert any(line.startswith("task t1 started") for line in progress)

    follow = await session.call_tool("ask", {"query": "When was he born?", "thread_id": answer["thread_id"]})
    assert not follow.isError, follow.content
    assert follow.structuredContent["thread_id"] == answer["thread_id"]
    assert (
        follow.structuredContent["answer"] == FOLLOW_UP and follow.structuredContent["route"] == "writer_only"
    )
    assert any(f"User: {TOKYO}" in p for p in endpoint.prompts if "When was he born" in p), "the history"


async def check_errors(session: ClientSession) -> None:
    """Bad calls come back as tool errors with a clear message; the server goes on serving."""
    empty = await session.call_tool("ask", {"query": "   "})
    assert empty.isError and "the query is empty" in empty.content[0].text
    assert empty.structuredContent is None
    unknown = await session.call_tool("ask", {"query": "hello", "thread_id": "nope"})
    assert unknown.isError and "unknown thread id 'nope'" in unknown.content[0].text
    blank = await session.call_tool("search", {"query": ""})
    assert blank.isError and "the query is empty" in blank.content[0].text
    nowhere = await session.call_tool("search", {"query": "x", "collection": "nope"})
    assert nowhere.isError and "unknown collection 'nope'" in nowhere.content[0].text
    assert not (await session.call_tool("search", {"query": "sourdough starter", "k": 1})).isError


@pytest.mark.slow
async def test_over_stdio_ask_search_threads_and_errors(
    endpoint: Any, fixture_index: Path, tmp_path: Path
) -> None:
    env = mcp_env(endpoint.url, tmp_path, fixture_index)
    async with stdio_session(env, tmp_path) as session:
        pid = server_pid(tmp_path)
        await check_tools(session)
        await check_search(session)
        await check_ask_and_follow_up(session, endpoint)
        await check_errors(session)
        servers = children(pid)
        assert len(servers) >= 3, "the run's MCP servers (python, clock, docsearch) are its children"
    assert_gone({pid, *servers})


@pytest.mark.slow
async def test_over_streamable_http_ask_search_threads_and_errors(
    endpoint: Any, fixture_index: Path, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with open(tmp_path / "mcp.log", "w") as log:
        server = subprocess.Popen(
            command(tmp_path, "--transport", "streamable-http", "--port", str(port)),
            cwd=REPO,
            env=mcp_env(endpoint.url, tmp_path, fixture_index),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, (tmp_path / "mcp.log").read_text()[-3000:]
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        bound = [line for line in Path("/proc/net/tcp").read_text().splitlines() if f":{port:04X} " in line]
        assert bound and all(line.split()[1].startswith("0100007F:") for line in bound), "loopback only"
        async with http_session(url) as session:
            await check_tools(session)
            await check_search(session)
            await check_ask_and_follow_up(session, endpoint)
        async with http_session(url) as session:  # a second client: the run and its threads are shared
            await check_errors(session)
        servers = children(server.pid)
        assert len(servers) >= 3, "the run's MCP servers are the server's children"
    finally:
        stop_process(server, timeout_s=20)
    # uvicorn shuts the app down (the run closes), then re-raises SIGTERM: the shell sees "terminated"
    assert server.returncode in (0, -signal.SIGTERM), (tmp_path / "mcp.log").read_text()[-3000:]
    logged = (tmp_path / "mcp.log").read_text()
    # the SDK logs a ClosedResourceError of its standalone SSE writer when a client ends its session
    assert "app/" not in logged and "ERROR app." not in logged, logged[-3000:]
    assert_gone(servers)


async def test_missing_index_and_unreachable_model_are_tool_errors(tmp_path: Path) -> None:
    env = mcp_env("http://127.0.0.1:9/v1", tmp_path, tmp_path / "no-index")
    async with stdio_session(env, tmp_path) as session:
        pid = server_pid(tmp_path)
        search = await session.call_tool("search", {"query": LIGHTHOUSE})
        assert search.isError and "the default index 'docs' is empty" in search.content[0].text
        assert "aisearch index" in search.content[0].text
        ask = await session.call_tool("ask", {"query": TOKYO})
        assert ask.isError
        assert "cannot reach the master model endpoint http://127.0.0.1:9/v1" in ask.content[0].text
        assert {tool.name for tool in (await session.list_tools()).tools} == {"ask", "search"}, (
            "still serving"
        )
        servers = children(pid)
    assert_gone({pid, *servers})
    assert "Traceback" not in (tmp_path / "mcp.log").read_text()


@pytest.mark.slow
async def test_a_run_that_cannot_open_is_a_tool_error_and_search_still_works(
    endpoint: Any, fixture_index: Path, tmp_path: Path
) -> None:
    env = mcp_env(endpoint.url, tmp_path, fixture_index)
    async with stdio_session(env, tmp_path, "--mcp-config", str(tmp_path / "missing.json")) as session:
        ask = await session.call_tool("ask", {"query": TOKYO})
        assert ask.isError and "aisearch could not start its run (ServerConfigError" in ask.content[0].text
        assert f"MCP server config not found: {tmp_path / 'missing.json'}" in ask.content[0].text
        search = await session.call_tool("search", {"query": LIGHTHOUSE, "k": 1})
        assert not search.isError and search.structuredContent["results"][0]["title"].endswith("Lighthouse")
    assert "Traceback" not in (tmp_path / "mcp.log").read_text()


def test_sigterm_over_stdio_closes_the_run_and_its_servers(tmp_path: Path) -> None:
    """A client that kills the server instead of closing its stdin: the run still closes."""
    env = mcp_env("http://127.0.0.1:9/v1", tmp_path, tmp_path / "no-index")
    with open(tmp_path / "mcp.log", "w") as log:
        server = subprocess.Popen(
            command(tmp_path), cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log
        )
    try:
        deadline = time.monotonic() + 90
        while len(servers := children(server.pid)) < 2:  # python and clock: the run is open
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "mcp.log").read_text()
            time.sleep(0.2)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)  # stdin is still open: the stdio transport alone would wait for it
    finally:
        stop_process(server)
        assert server.stdin is not None and server.stdout is not None
        server.stdin.close()
        server.stdout.close()
    assert server.returncode == -signal.SIGTERM
    assert_gone(servers, timeout_s=5)
    assert "Traceback" not in (tmp_path / "mcp.log").read_text()
