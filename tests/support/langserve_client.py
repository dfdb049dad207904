"""LangServe's own client (``RemoteRunnable`` from ``langserve`` 0.3.x) in an environment of its own.

LangServe cannot be installed beside langgraph-api, so the client lives in a separate virtual
environment, built once under ``~/.cache/aisearch`` (where the project keeps what it builds) and
reused. Tests run :data:`CLIENT_SCRIPT` there against a real ``aisearch serve``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from filelock import FileLock

from models.assemble import cache_dir

LANGSERVE = "langserve[client]==0.3.3"

CLIENT_SCRIPT = """
import asyncio, json, sys
from langserve import RemoteRunnable

url, query = sys.argv[1], sys.argv[2]
remote = RemoteRunnable(url, timeout=60)
config = {"configurable": {"thread_id": "langserve-client-thread"}}
result = {
    "invoke": remote.invoke({"query": query}, config=config),
    "batch": remote.batch([{"query": query}, {"query": query}]),
    "stream": list(remote.stream({"query": query})),
}


async def events():
    stream = remote.astream_events({"query": query}, version="v2", include_names=["writer", "master"])
    return [(event["event"], event["name"]) async for event in stream]


result["stream_events"] = asyncio.run(events())
try:
    remote.invoke({"query": ""})
except Exception as exc:  # the client raises the server's 4xx as an httpx error
    result["empty_query_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(result, default=str))
"""


def client_python() -> Path | str:
    """The interpreter of the LangServe client environment, or why it could not be built (str)."""
    root = cache_dir() / "langserve-client"
    python = root / "bin" / "python"
    with FileLock(str(root) + ".lock"):
        if python.exists() and (root / "ready").read_text(errors="ignore").strip() == LANGSERVE:
            return python
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(root)],
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", LANGSERVE],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600, check=False)
            if done.returncode != 0:
                return f"could not build the LangServe client environment: {done.stderr[-500:]}"
        (root / "ready").write_text(LANGSERVE)
    return python


def run_client(python: Path, url: str, query: str) -> dict[str, Any]:
    """Drive ``url`` with ``RemoteRunnable`` and return what each call gave back."""
    done = subprocess.run(
        [str(python), "-c", CLIENT_SCRIPT, url, query],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
