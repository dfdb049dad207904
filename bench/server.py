"""``aisearch serve`` as a subprocess on a free loopback port: the benchmarks' server, and the tests'.

``start_serve`` starts it with the given environment and extra arguments, its output appended to a
log file, and returns once ``GET /health`` answers; ``stop_serve`` ends it; ``serving`` does both
around a block.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from models.server_process import free_port

REPO = Path(__file__).resolve().parent.parent
"""The checkout the subprocesses run in (``python -m app.cli`` imports the packages from it)."""
START_TIMEOUT_S = 120.0
LOG_TAIL_CHARS = 3000


class ServeError(RuntimeError):
    """``aisearch serve`` exited or did not answer ``/health`` in time (the message ends with its log)."""


def start_serve(
    env: dict[str, str], log_path: Path, *args: str, timeout_s: float = START_TIMEOUT_S
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``aisearch serve`` on a free loopback port and wait until ``/health`` answers.

    Args:
        env: The server's whole environment.
        log_path: Its stdout and stderr are appended here.
        *args: More arguments of ``aisearch serve`` (``--mcp-config PATH``, ``--workers N``).
        timeout_s: How long it may take to answer.

    Returns:
        The process and its base URL (``http://127.0.0.1:PORT``).

    Raises:
        ServeError: It exited, or did not answer in ``timeout_s`` (it is stopped then).
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--log-level", "warning", *args]
    with open(log_path, "a") as log:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServeError(f"aisearch serve exited:\n{log_path.read_text()[-LOG_TAIL_CHARS:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    stop_serve(process)
    raise ServeError(
        f"aisearch serve did not start in {timeout_s:g} s:\n{log_path.read_text()[-LOG_TAIL_CHARS:]}"
    )


def stop_serve(process: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    """Terminate the server; kill it if it has not exited within ``timeout_s``."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def serving(
    env: dict[str, str], log_path: Path, *args: str, timeout_s: float = START_TIMEOUT_S
) -> Iterator[str]:
    """``aisearch serve`` until the block ends; yields its base URL (see :func:`start_serve`)."""
    process, url = start_serve(env, log_path, *args, timeout_s=timeout_s)
    try:
        yield url
    finally:
        stop_serve(process)
