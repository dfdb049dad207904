"""The servers' processes, as the model and the document server's lifecycles handle them
(``models/local_server.py``, ``tools/docs_server.py``): a free loopback port, a detached start with
its output appended to a log, whether a recorded pid still runs and is ours, its stop, and the
log's tail for error messages."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

LOG_TAIL_LINES = 40
ADDRESS_IN_USE = ("address already in use", "errno 98", "couldn't bind http server socket")
"""What a server's error says when its port was taken between choosing it and binding it."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that is free right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as dead; our own dead children are reaped)."""
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def is_our_process(pid: int, argument: str) -> bool:
    """Whether ``pid`` was started with ``argument`` on its command line (guards against pid reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return pid_alive(pid)
    return argument.encode() in cmdline


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a server's log file (for error messages)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def terminate(pid: int, timeout_s: float) -> None:
    """SIGTERM ``pid``, then SIGKILL if it still runs after ``timeout_s`` seconds; wait until it is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.1)
    log.warning("pid %d did not exit after SIGTERM; sending SIGKILL", pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    while pid_alive(pid) and time.monotonic() < deadline + 5:
        time.sleep(0.1)


def spawn_detached(
    command: Sequence[str], log_path: Path, env: Mapping[str, str], cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start ``command`` in a session of its own (a terminal's Ctrl-C does not reach it), its output
    appended to ``log_path`` after a line with the time and the command."""
    with open(log_path, "ab") as log_fh:
        log_fh.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command)}\n".encode())
        log_fh.flush()
        return subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=log_fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            cwd=cwd,
            env=dict(env),
        )


def stop_ours(pid: int, marker: str, timeout_s: float, name: str) -> bool:
    """Stop ``pid`` (see :func:`terminate`) when it runs and was started with ``marker`` on its command
    line; return whether it was stopped. ``name`` says what it is in the log."""
    if pid > 0 and pid_alive(pid) and is_our_process(pid, marker):
        log.info("stopping the %s (pid %d)", name, pid)
        terminate(pid, timeout_s)
        return True
    return False
