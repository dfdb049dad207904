"""The "docsearch" MCP server as a real subprocess (stdio and streamable HTTP), on a temp index."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

from tests.support.processes import stop_process
from tools.index.ingest import index_paths
from tools.index.store import IndexStore

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "docs"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index with the fixture corpus in 'docs' and an empty collection 'empty'."""
    root = tmp_path_factory.mktemp("docsearch")
    shutil.copytree(FIXTURES, root / "docs")
    (root / "nothing").mkdir()
    store = IndexStore(root / "index")
    index_paths([root / "docs"], "docs", store=store)
    index_paths([root / "nothing"], "empty", store=store)
    return root / "index"


def _client(index_dir: Path, *args: str, **env: str) -> MultiServerMCPClient:
    return MultiServerMCPClient(
        {
            "docsearch": {
                "command": sys.executable,
                "args": ["-m", "tools.servers.docsearch_server", *args],
                "transport": "stdio",
                "cwd": str(REPO_ROOT),
                "env": {**os.environ, "AISEARCH_INDEX_DIR": str(index_dir), **env},
            }
        }
    )


def _payload(result: Any) -> dict[str, Any]:
    assert not result.isError, result.content[0].text
    return json.loads(result.content[0].text)


@pytest.mark.slow
async def test_search_read_and_errors_over_stdio(index_dir: Path) -> None:
    async with _client(index_dir, "--no-default-build").session("docsearch") as session:
        tools = {tool.name: tool for tool in await load_mcp_tools(session)}
        assert set(tools) == {"search", "read", "follow_links"}
        assert "Example questions" in tools["search"].description
        assert "pretty-print JSON" in tools["search"].description
        first_line = tools["search"].description.splitlines()[0]
        assert "docs: 6 files under docs, 12 passages" in first_line, "collections are named"
        assert "empty: no documents yet, 0 passages" in first_line
        assert set(tools["search"].args) == {"query", "k", "collection", "full"}
        assert set(tools["read"].args) == {"passage_id", "collection"}

        found = _payload(
            await session.call_tool("search", {"query": "Who built the Harrow Point lighthouse?"})
        )
        assert found["query"] == "Who built the Harrow Point lighthouse?" and found["collection"] == "docs"
        top = found["results"][0]
        assert set(top) >= {"id", "title", "snippet", "source", "score"}
        assert top["title"] == "The Harrow Point Lighthouse" and "Miriam Calloway" in top["snippet"]
        assert top["source"].endswith("lighthouse.html") and len(found["results"]) == 5

        bounded = _payload(await session.call_tool("search", {"query": "river", "k": 500}))
        assert len(bounded["results"]) == 12  # k is capped at 20; the fixture has 12 passages
        assert all(len(r["snippet"]) <= 600 for r in bounded["results"])
        bridge = next(r for r in bounded["results"] if r["title"] == "Kestrel Bridge")
        assert bridge["source"] == "https://example.org/wiki/Kestrel_Bridge"

        passage = _payload(await session.call_tool("read", {"passage_id": top["id"]}))
        assert passage["id"] == top["id"] and passage["title"] == top["title"]
        assert "interlocking granite blocks" in passage["text"]

        whole = _payload(await session.call_tool("search", {"query": "Kestrel Bridge", "k": 1, "full": True}))
        kestrel = whole["results"][0]
        assert kestrel["title"] == "Kestrel Bridge" and kestrel["text"].endswith("carries four lanes.")
        linked = _payload(
            await session.call_tool(
                "follow_links", {"passage_ids": [kestrel["id"]], "query": "Kestrel Bridge over the River Ome"}
            )
        )
        assert [r["title"] for r in linked["results"]] == ["River Ome"], "a document the query names"
        result = await session.call_tool("follow_links", {"passage_ids": ["0000000000000000"]})
        assert result.isError and "none of the passage ids" in result.content[0].text

        result = await session.call_tool("search", {"query": "x", "collection": "nope"})
        assert result.isError and "unknown collection 'nope'" in result.content[0].text
        assert "known collections: docs, empty" in result.content[0].text
        result = await session.call_tool("search", {"query": "x", "collection": "empty"})
        assert result.isError and "is empty: run `aisearch index PATH" in result.content[0].text
        result = await session.call_tool("read", {"passage_id": "0000000000000000"})
        assert result.isError and "no passage with id '0000000000000000'" in result.content[0].text
        result = await session.call_tool("search", {"query": "   "})
        assert result.isError and "the query is empty" in result.content[0].text


@pytest.mark.slow
async def test_default_collection_is_built_in_the_background(tmp_path: Path) -> None:
    env = {
        "AISEARCH_DEFAULT_CORPUS_MODULES": "json",
        "AISEARCH_DEFAULT_CORPUS_TOPICS": "0",
        "AISEARCH_DOCSEARCH_DEFAULT_BUILD": "1",
    }  # conftest turns the default build off for other tests
    async with _client(tmp_path / "fresh", **env).session("docsearch") as session:
        first = await session.call_tool("search", {"query": "How do I pretty-print JSON?"})
        assert first.isError and "the default index 'docs'" in first.content[0].text
        assert "is being built" in first.content[0].text
        deadline = time.monotonic() + 90
        while True:
            result = await session.call_tool("search", {"query": "How do I pretty-print JSON?", "k": 3})
            if not result.isError or time.monotonic() > deadline:
                break
            assert "is being built" in result.content[0].text
            time.sleep(0.5)
        found = _payload(result)
        assert all(r["title"].startswith("json") for r in found["results"])
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        assert found["results"][0]["source"] == f"https://docs.python.org/{version}/library/json.html"
    state = json.loads((tmp_path / "fresh" / "collections" / "docs" / "state.json").read_text())
    assert state["status"] == "ready" and state["passages"] > 5


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
async def test_streamable_http_transport(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.servers.docsearch_server", "--transport", "streamable-http"]
        + ["--port", str(port), "--no-default-build", "--no-warmup"],
        cwd=REPO_ROOT,
        env={**os.environ, "AISEARCH_INDEX_DIR": str(tmp_path / "index")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, "server exited early"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "server did not listen"
                time.sleep(0.1)
        client = MultiServerMCPClient(
            {"docsearch": {"transport": "streamable_http", "url": f"http://127.0.0.1:{port}/mcp"}}
        )
        async with client.session("docsearch") as session:
            assert {t.name for t in (await session.list_tools()).tools} == {"search", "read", "follow_links"}
            result = await session.call_tool("search", {"query": "anything"})
        assert result.isError and "the default index 'docs' is empty" in result.content[0].text
        assert "aisearch index --default" in result.content[0].text
    finally:
        stop_process(proc)


@pytest.mark.parametrize("how", ["env", "flag"])
@pytest.mark.slow
async def test_a_call_without_a_collection_searches_the_servers_default(tmp_path: Path, how: str) -> None:
    """The evaluation serves its corpus this way (``AISEARCH_DOCSEARCH_COLLECTION`` or ``--collection``)."""
    from tools.index.ingest import index_sources
    from tools.index.sources import file_source

    corpus = REPO_ROOT / "tests" / "fixtures" / "hotpot" / "corpus.jsonl"
    index_sources(
        IndexStore(tmp_path).collection("hotpot"),
        [file_source(corpus)],
        in_scope=lambda key: key != str(corpus),
    )
    args, env = (
        (["--collection", "hotpot"], {})
        if how == "flag"
        else ([], {"AISEARCH_DOCSEARCH_COLLECTION": "hotpot"})
    )
    async with _client(tmp_path, "--no-default-build", *args, **env).session("docsearch") as session:
        found = _payload(
            await session.call_tool("search", {"query": "Who built the Harrow Point Lighthouse?"})
        )
        assert found["collection"] == "hotpot" and found["results"][0]["title"] == "Harrow Point Lighthouse"
        passage = _payload(await session.call_tool("read", {"passage_id": found["results"][0]["id"]}))
        assert "Miriam Calloway" in passage["text"]
        result = await session.call_tool("search", {"query": "x", "collection": "docs"})
        assert result.isError, "a named collection is still searched as named"
