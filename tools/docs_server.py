"""The long-lived document server: the ``docsearch`` MCP server over streamable HTTP on loopback.

A CLI run that started docsearch over stdio paid about 5 s to import chromadb and load MiniLM
before its first search, every question. Like the local model server (``models/local_server.py``),
this one is started on first use, recorded, and reused by later runs:
:func:`ensure_docs_server` returns the state of a healthy server, starting one if needed
(``python -m tools.servers.docsearch_server --transport streamable-http --idle-timeout S``,
detached in its own session, log in its state directory). It also serves MiniLM embeddings
(``POST /embed``) so the CLI's route classifier loads no model either.

One server per index directory; its state file, lock and log live in
``<cache>/docs-server/<hash of the index dir>/``. A recorded server is reused when its pid runs,
was started for this index directory, answers ``GET /health`` with that pid, and its fingerprint
matches: the code under ``tools/``, the interpreter, the index directory, the ``AISEARCH_DOCSEARCH_*``
environment and every collection's generation (so after ``aisearch index`` changed a collection a
new server describes what is there now). Otherwise the recorded one is stopped and replaced.

It exits by itself after ``idle_s`` seconds without a request (a CLI run holds its MCP session's
event stream open, so a run in progress keeps it alive). It binds 127.0.0.1 only, and its
environment carries no API keys or tokens. Ctrl-C while it starts stops it again: nothing is left
running that no state file records.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from filelock import FileLock, Timeout

import tools
from models.assemble import cache_dir
from models.idle_http import RETIRE_PATH
from models.server_process import (
    ADDRESS_IN_USE,
    free_port,
    is_our_process,
    log_tail,
    pid_alive,
    port_open,
    spawn_detached,
    stop_ours,
    terminate,
)
from tools.index.jsonfiles import read_json, write_json
from tools.index.paths import default_index_dir
from tools.registry import DOCSEARCH_MODULE, bundled_env
from tools.settings import docs_server_settings

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
SERVER_ENV_PREFIX = "AISEARCH_DOCSEARCH_"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
START_TIMEOUT_S = 90.0


class DocsServerError(RuntimeError):
    """The document server cannot be started or reached."""


def enabled_by_env() -> bool:
    """False when ``$AISEARCH_DOCS_SERVER`` turns the long-lived document server off (0, false, no, off)."""
    return docs_server_settings().enabled


def _index_dir(index_dir: Path | None) -> Path:
    return (index_dir or default_index_dir()).expanduser().resolve()


def state_dir(index_dir: Path | None = None) -> Path:
    """Where the server of ``index_dir`` (default: the configured index) keeps its state, lock and log."""
    key = hashlib.sha256(str(_index_dir(index_dir)).encode()).hexdigest()[:12]
    return cache_dir() / "docs-server" / key


def read_state(index_dir: Path | None = None) -> dict[str, Any] | None:
    """The recorded server of ``index_dir``, or None."""
    state = read_json(state_dir(index_dir) / "state.json", None)
    return state if isinstance(state, dict) else None


def _code_digest() -> str:
    digest = hashlib.sha256()
    root = Path(tools.__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def fingerprint(index_dir: Path | None = None) -> dict[str, Any]:
    """What a running server must match to be reused (see the module docstring)."""
    index = _index_dir(index_dir)
    collections: dict[str, Any] = {}
    root = index / "collections"
    if root.is_dir():
        for path in sorted(root.iterdir()):
            state = read_json(path / "state.json", {})
            collections[path.name] = [state.get("generation", 0), state.get("status", "")]
    environment = {k: v for k, v in sorted(os.environ.items()) if k.startswith(SERVER_ENV_PREFIX)}
    return {
        "code": _code_digest(),
        "python": sys.executable,
        "index_dir": str(index),
        "environment": environment,
        "collections": collections,
    }


def server_env() -> dict[str, str]:
    """The server's environment: what docsearch reads over stdio (``bundled_env``), without secrets."""
    env = {key: value for key, value in bundled_env("docsearch").items() if not SECRET_NAME.search(key)}
    return {**env, "PYTHONUNBUFFERED": "1"}


def _health(url: str, timeout_s: float = 2.0) -> int | None:
    """The pid ``GET {url}/health`` reports, or None when it does not answer."""
    try:
        response = httpx.get(f"{url}/health", timeout=timeout_s)
        response.raise_for_status()
        return int(response.json()["pid"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


def _alive(state: dict[str, Any]) -> bool:
    """Whether the recorded process runs, is a document server for the recorded index, and answers."""
    pid = int(state.get("pid", 0))
    return (
        pid > 0
        and pid_alive(pid)
        and is_our_process(pid, str(state.get("index_dir", "")))
        and port_open(HOST, int(state.get("port", 0)))
        and _health(str(state.get("url", ""))) == pid
    )


def running_state(index_dir: Path | None = None) -> dict[str, Any] | None:
    """The state of the running, healthy server of ``index_dir`` (whatever its fingerprint), or None."""
    state = read_state(index_dir)
    return state if state and _alive(state) else None


def mcp_connection(state: dict[str, Any]) -> dict[str, Any]:
    """The langchain-mcp-adapters connection to the server of ``state``."""
    return {"transport": "streamable_http", "url": f"{state['url']}/mcp"}


def _spawn(directory: Path, index: Path, port: int, idle_s: float) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        DOCSEARCH_MODULE,
        "--transport",
        "streamable-http",
        "--host",
        HOST,
        "--port",
        str(port),
        "--idle-timeout",
        f"{idle_s:g}",
        "--index-dir",
        str(index),
        "--no-default-build",
        "--log-level",
        "INFO",
    ]
    # in a session of its own: the terminal's Ctrl-C of one run must not stop a shared server;
    # started from the checkout the fingerprint hashed
    return spawn_detached(cmd, directory / "server.log", server_env(), cwd=Path(tools.__file__).parent.parent)


def _wait_healthy(
    proc: subprocess.Popen[bytes], url: str, log_path: Path, timeout_s: float, cancel: threading.Event | None
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cancel is not None and cancel.is_set():
            raise DocsServerError("the document server's start was interrupted")
        if proc.poll() is not None:
            raise DocsServerError(
                f"the document server exited with code {proc.returncode} while starting; "
                f"last lines of {log_path}:\n{log_tail(log_path)}"
            )
        if _health(url, timeout_s=1.0) == proc.pid:
            return
        time.sleep(0.1)
    raise DocsServerError(
        f"the document server did not answer within {timeout_s:.0f} s; last lines of {log_path}:\n"
        f"{log_tail(log_path)}"
    )


def _start(
    directory: Path,
    index: Path,
    wanted: dict[str, Any],
    idle_s: float,
    timeout_s: float,
    cancel: threading.Event | None,
) -> dict[str, Any]:
    for attempt in range(3):
        port = free_port(HOST)
        url = f"http://{HOST}:{port}"
        started = time.monotonic()
        proc = _spawn(directory, index, port, idle_s)
        log.info("starting the document server (pid %d) on %s", proc.pid, url)
        try:
            _wait_healthy(proc, url, directory / "server.log", timeout_s, cancel)
        except BaseException as exc:  # also Ctrl-C: a server nobody records must not stay behind
            terminate(proc.pid, 5.0)
            busy = isinstance(exc, DocsServerError) and any(s in str(exc).lower() for s in ADDRESS_IN_USE)
            if busy and attempt < 2:
                log.warning("port %d was taken meanwhile; retrying on another port", port)
                continue
            raise
        state = {
            "pid": proc.pid,
            "port": port,
            "url": url,
            "index_dir": str(index),
            "idle_s": idle_s,
            "log": str(directory / "server.log"),
            "started_at": time.time(),
            "start_seconds": round(time.monotonic() - started, 2),
            "fingerprint": wanted,  # taken before the start: an index changed meanwhile replaces it
        }
        write_json(directory / "state.json", state)
        log.info("document server ready after %.1f s", state["start_seconds"])
        return state
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _locked(directory: Path, timeout_s: float, cancel: threading.Event | None = None) -> Iterator[None]:
    """Hold the server's lock (another process may be starting it); ``cancel`` abandons the wait."""
    lock = FileLock(str(directory / "lock"))
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            lock.acquire(timeout=0.5)
            break
        except Timeout:
            if (cancel is not None and cancel.is_set()) or time.monotonic() > deadline:
                raise DocsServerError(f"the document server's lock {lock.lock_file} stayed busy") from None
    try:
        yield
    finally:
        lock.release()


def _stop_recorded(directory: Path, state: dict[str, Any], timeout_s: float) -> bool:
    stopped = stop_ours(
        int(state.get("pid", 0)), str(state.get("index_dir", "")), timeout_s, "document server"
    )
    (directory / "state.json").unlink(missing_ok=True)
    return stopped


def _replace(directory: Path, state: dict[str, Any]) -> None:
    """Make way for a new server: a live stale one is retired (it exits once the runs that use it
    are done), one that does not answer is stopped; either way its record goes."""
    if _alive(state):
        log.warning(
            "the document server (pid %s) serves older code or index state; replacing it", state["pid"]
        )
        try:
            httpx.post(f"{state['url']}{RETIRE_PATH}", timeout=2.0).raise_for_status()
        except httpx.HTTPError:
            _stop_recorded(directory, state, 10.0)
            return
        (directory / "state.json").unlink(missing_ok=True)
        return
    _stop_recorded(directory, state, 10.0)


def ensure_docs_server(
    *,
    idle_s: float,
    index_dir: Path | None = None,
    start_timeout_s: float = START_TIMEOUT_S,
    cancel: threading.Event | None = None,
) -> tuple[dict[str, Any], bool]:
    """The state of a healthy document server for ``index_dir``, and whether this call started it.

    Args:
        idle_s: Seconds without a request after which a server started here exits.
        index_dir: The index it serves (default ``$AISEARCH_INDEX_DIR`` or the user's index).
        start_timeout_s: How long to wait for a new server to answer.
        cancel: Set from another thread to abandon a start (the new server is stopped).

    Raises:
        DocsServerError: The server exited, did not answer in time, or the start was cancelled
            (the message has the log's last lines).
    """
    index = _index_dir(index_dir)
    directory = state_dir(index)
    directory.mkdir(parents=True, exist_ok=True)
    wanted = fingerprint(index)
    with _locked(directory, start_timeout_s + 30, cancel):
        state = read_state(index)
        if state and _alive(state) and state.get("fingerprint") == wanted:
            return state, False
        if state:
            _replace(directory, state)
        return _start(directory, index, wanted, idle_s, start_timeout_s, cancel), True


def stop_docs_server(index_dir: Path | None = None, timeout_s: float = 10.0) -> bool:
    """Stop the recorded server of ``index_dir`` if it runs; return whether a process was stopped."""
    directory = state_dir(index_dir)
    state = read_state(index_dir)
    if not state:
        return False
    with _locked(directory, START_TIMEOUT_S + 30):
        state = read_state(index_dir)
        return _stop_recorded(directory, state, timeout_s) if state else False


def docs_server_status(index_dir: Path | None = None) -> dict[str, Any]:
    """``{"running": bool, ...the recorded state, "uptime_s", "current": fingerprint matches}``."""
    state = read_state(index_dir)
    if not state:
        return {"running": False, "index_dir": str(_index_dir(index_dir))}
    running = _alive(state)
    result: dict[str, Any] = {"running": running, **state}
    if running:
        result["uptime_s"] = round(time.time() - float(state.get("started_at", time.time())), 1)
        result["current"] = state.get("fingerprint") == fingerprint(index_dir)
    result.pop("fingerprint", None)
    return result
