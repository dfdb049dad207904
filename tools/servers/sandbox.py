"""Run untrusted Python code in a sandboxed subprocess; the isolation comes from the operating system.

The code runs in a fresh ``sys.executable -I -B`` process (``tools/servers/sandbox_child.py``, standard
library only) in a session of its own, with a clean environment (``PATH``, ``HOME``, ``TMPDIR``,
``LANG``: no ``AISEARCH_*`` setting, no key). Its layers, each described in its file:

* a memory cgroup of the run (``sandbox_cgroup.py``), where one can be made: every page the run
  holds counts, shared memory and tmpfs files too, and no swap;
* Linux namespaces (``sandbox_os.py``): a PID namespace (the code sees only its own processes, and
  they all die with it), a mount namespace (a fresh ``/proc``; every top-level directory but
  ``/usr``, ``/bin``, ``/lib*``, ``/etc`` and ``/dev`` is an empty tmpfs; the Python installation is
  bound back read-only; the working directory and ``/dev/shm`` are private tmpfs of fixed size), a
  network namespace (no network at all), an IPC namespace (no System V object outlives the run),
  and a user namespace when the server does not run as root;
* no privilege: root becomes ``nobody``, in a user namespace every capability is dropped, and
  ``no_new_privs`` is set;
* resource limits: memory (``RLIMIT_AS``), CPU seconds, file size, open files, processes
  (``RLIMIT_NPROC``), no core dumps;
* a seccomp filter: ``execve``, process creation, ``memfd_create``, ``io_uring`` and every socket
  family but ``AF_UNIX`` fail (threads work);
* an audit hook (``sandbox_hook.py``) with clear messages: a tripwire on top, not a layer that
  holds (code can switch it off).

The parent enforces the wall-clock timeout: it asks the supervisor to stop (SIGTERM: the supervisor
kills every descendant), then kills the child's process group. The supervisor gets the same SIGTERM
when the server dies (parent-death signal), the init dies with the supervisor, and the kernel kills
every process of a PID namespace when its init dies, so nothing outlives a run, a timeout or the
server itself. A
mechanism the OS refuses is logged once as a warning naming what is missing
(``AISEARCH_SANDBOX_NAMESPACES=0`` turns the namespaces off on purpose). Nothing is ever evaluated in
the parent.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tools.servers import sandbox_cgroup

# This module runs on the standard library alone (as ``nobody``, from a copy of its own files), so
# it reads its one setting itself; tools/settings.py declares it (``sandbox_namespaces``) and
# load_settings rejects a malformed value before any sandbox starts.
NAMESPACES_ENV = "AISEARCH_SANDBOX_NAMESPACES"
FILE_MB = 64
NPROC = 32
_warned: set[str] = set()

logger = logging.getLogger(__name__)

MAX_OUTPUT_BYTES = 8 * 1024
_MAX_RESULT_BYTES = 64 * 1024

TIMEOUT_MSG = "timed out after {timeout} s"
MEMORY_MSG = "memory limit of {memory} MB exceeded"
CHILD = Path(__file__).resolve().with_name("sandbox_child.py")  # run, never imported here


@dataclass
class SandboxResult:
    """Outcome of one sandboxed run.

    Attributes:
        ok: True when the code ran to completion without an error.
        stdout: What the code printed (stdout and stderr), capped, with a note when truncated.
        value: ``repr`` of the last expression when the code ends in one (like a REPL), else None.
        error: A short, specific error message when ``ok`` is False, else None.
        missing: The isolation mechanisms the OS refused for this run (empty when all held).
    """

    ok: bool
    stdout: str
    value: str | None
    error: str | None
    missing: tuple[str, ...] = ()


class _Drain(threading.Thread):
    """Reads a pipe to the end, keeping at most ``cap`` bytes and counting the rest."""

    def __init__(self, fd: int, cap: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.cap = fd, cap
        self.data = bytearray()
        self.dropped = 0

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 65536):
                room = self.cap - len(self.data)
                if room > 0:
                    self.data += chunk[:room]
                self.dropped += max(0, len(chunk) - max(room, 0))
        except OSError:
            pass
        finally:
            os.close(self.fd)


def _format_timeout(timeout_s: float) -> str:
    return TIMEOUT_MSG.format(timeout=float(timeout_s))


def _child_env(workdir: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def namespaces_enabled() -> bool:
    """Whether the sandbox asks for Linux namespaces (``AISEARCH_SANDBOX_NAMESPACES=0`` turns them off)."""
    return os.environ.get(NAMESPACES_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _warn_missing(missing: tuple[str, ...]) -> None:
    for what in missing:
        if what not in _warned:
            _warned.add(what)
            logger.warning(
                "python sandbox is WEAKER than designed: %s; see docs/security.md for what the "
                "sandbox still guarantees without it",
                what,
            )


def run_sandboxed(
    code: str,
    *,
    timeout_s: float = 5.0,
    memory_mb: int = 256,
    max_output: int = MAX_OUTPUT_BYTES,
    namespaces: bool | None = None,
    seccomp: bool = True,
    audit_hook: bool = True,
    nproc: int = NPROC,
) -> SandboxResult:
    """Run ``code`` in a sandboxed Python subprocess and report what happened.

    Args:
        code: Python source. If it ends in an expression, its ``repr`` is returned as ``value``.
        timeout_s: Wall-clock limit in seconds; the process group is killed when it runs out.
        memory_mb: Address-space limit of each sandboxed process, and memory limit of the whole run
            (its cgroup), in megabytes.
        max_output: Maximum number of bytes of output kept; the rest is dropped with a note.
        namespaces: Use Linux namespaces (default: unless ``AISEARCH_SANDBOX_NAMESPACES=0``).
        seccomp: Install the seccomp filter against exec and fork (the tests turn layers off to
            show that each remaining one holds alone).
        audit_hook: Install the audit hook.
        nproc: ``RLIMIT_NPROC`` of the code.

    Returns:
        A ``SandboxResult``; failures are reported in ``error``, never raised.
    """
    cpu_s = max(1, int(timeout_s + 0.999)) + 1
    with_ns = namespaces_enabled() if namespaces is None else namespaces
    cgroup, no_cgroup = sandbox_cgroup.create(int(memory_mb))
    with tempfile.TemporaryDirectory(prefix="aisearch-sandbox-", ignore_cleanup_errors=True) as workdir:
        result_r, result_w = os.pipe()
        status_r, status_w = os.pipe()
        config = {
            "result_fd": result_w, "status_fd": status_w, "parent": os.getpid(), "workdir": workdir,
            "memory_mb": int(memory_mb), "cpu_s": cpu_s, "cap": max_output, "file_mb": FILE_MB,
            "nproc": int(nproc), "namespaces": with_ns, "seccomp": seccomp, "hook": audit_hook,
            "cgroup": str(cgroup) if cgroup else None,
        }  # fmt: skip
        cmd = [sys.executable, "-I", "-B", str(CHILD), json.dumps(config)]
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=_child_env(workdir),
                pass_fds=(result_w, status_w),
                start_new_session=True,
            )
        except OSError as exc:
            os.close(result_r)
            os.close(status_r)
            _remove_cgroup(cgroup)
            logger.exception("could not start the sandbox process")
            return SandboxResult(False, "", None, f"could not start the sandbox: {exc}")
        finally:
            os.close(result_w)
            os.close(status_w)
        assert proc.stdin is not None and proc.stdout is not None
        out = _Drain(os.dup(proc.stdout.fileno()), max_output)
        res = _Drain(result_r, _MAX_RESULT_BYTES)
        status = _Drain(status_r, _MAX_RESULT_BYTES)
        proc.stdout.close()
        for drain in (out, res, status):
            drain.start()
        try:
            proc.stdin.write(code.encode("utf-8", "replace"))
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        timed_out = False
        try:
            proc.wait(timeout=max(0.0, timeout_s - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(proc)
        _kill_group(proc.pid)
        proc.wait()
        for drain in (out, res, status):
            drain.join(timeout=2.0)
    over_memory = cgroup is not None and sandbox_cgroup.oom_killed(cgroup)
    _remove_cgroup(cgroup)
    missing = tuple(line for line in status.data.decode("utf-8", "replace").splitlines() if line)
    if no_cgroup:
        missing = (f"no memory cgroup ({no_cgroup})", *missing)
    if not with_ns:
        missing = (f"Linux namespaces are turned off ({NAMESPACES_ENV}=0)", *missing)
    _warn_missing(missing)
    result = _build_result(proc.returncode, timed_out, out, res, timeout_s, memory_mb, over_memory)
    result.missing = missing
    return result


def _remove_cgroup(cgroup: Path | None) -> None:
    if cgroup is not None:
        try:
            sandbox_cgroup.remove(cgroup)
        except OSError as exc:
            logger.warning("could not remove the sandbox's cgroup %s: %s", cgroup, exc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Ask the supervisor to kill every process of the run (SIGTERM), for at most a second."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=1.0)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        pass


def _kill_group(pgid: int) -> None:
    """Kill the sandbox's process group: the supervisor (whose death kills the rest) and its strays.

    After the supervisor was reaped its id stays reserved while a member of its group lives; with
    none left, ``killpg`` finds nothing (ESRCH).
    """
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _build_result(
    returncode: int,
    timed_out: bool,
    out: _Drain,
    res: _Drain,
    timeout_s: float,
    memory_mb: int,
    over_memory: bool,
) -> SandboxResult:
    stdout = out.data.decode("utf-8", "replace")
    if out.dropped:
        stdout += f"\n... [output truncated: {out.dropped} more bytes]"
    try:
        payload = json.loads(res.data.decode("utf-8")) if res.data else None
    except ValueError:
        payload = None
    if timed_out:
        return SandboxResult(False, stdout, None, _format_timeout(timeout_s))
    if over_memory or (isinstance(payload, dict) and payload.get("kind") == "memory"):
        return SandboxResult(False, stdout, None, MEMORY_MSG.format(memory=memory_mb))
    if isinstance(payload, dict):
        return SandboxResult(bool(payload.get("ok")), stdout, payload.get("value"), payload.get("error"))
    if returncode > 128 and returncode - 128 in {s.value for s in signal.Signals}:
        returncode = -(returncode - 128)  # the supervisor passes on the worker's signal as 128 + its number
    if returncode == -signal.SIGXCPU:
        return SandboxResult(False, stdout, None, _format_timeout(timeout_s) + " (CPU time limit reached)")
    if returncode < 0:
        name = signal.Signals(-returncode).name
        error = (
            f"the sandboxed process was killed by {name} "
            f"(it may have exceeded the memory limit of {memory_mb} MB)"
        )
        return SandboxResult(False, stdout, None, error)
    if returncode == 0:
        return SandboxResult(True, stdout, None, None)
    return SandboxResult(False, stdout, None, f"the sandboxed process exited with code {returncode}")
