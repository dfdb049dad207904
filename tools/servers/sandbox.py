"""Run untrusted Python code in a sandboxed subprocess.

The code runs in a fresh ``sys.executable -I -B`` process, in its own session (process group), with a
fresh temporary directory as its working directory (deleted afterwards). The child program
(``tools/servers/sandbox_child.py``, standard library only) prepares itself before the user code runs:

* resource limits: ``RLIMIT_AS`` (memory), ``RLIMIT_CPU`` (CPU seconds), ``RLIMIT_FSIZE`` (file
  size), no core dumps;
* a private, empty network namespace when the kernel allows it (``unshare(CLONE_NEWNET)``; silently
  skipped otherwise);
* an audit hook (``sys.addaudithook``, PEP 578) that refuses sockets and other network access, file
  writes outside the temporary directory, process creation (``subprocess``, ``os.system``,
  ``os.exec*``, ``os.spawn*``, ``os.posix_spawn``, ``os.fork``), signalling other processes, raising
  resource limits, ``ctypes`` and heap introspection through ``gc``.

The parent enforces a wall-clock timeout (it kills the whole process group), caps the captured
output, and reads a small JSON result from a dedicated pipe. Nothing is ever evaluated in the
parent. Audit hooks are a tripwire rather than a hard security boundary (PEP 578 says so); the
hard limits are the separate process, the resource limits, the network namespace and the timeout.
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

from tools.servers import sandbox_child

logger = logging.getLogger(__name__)

MAX_OUTPUT_BYTES = 8 * 1024
_MAX_RESULT_BYTES = 64 * 1024

TIMEOUT_MSG = "timed out after {timeout} s"
MEMORY_MSG = "memory limit of {memory} MB exceeded"
CHILD = Path(sandbox_child.__file__).resolve()


@dataclass
class SandboxResult:
    """Outcome of one sandboxed run.

    Attributes:
        ok: True when the code ran to completion without an error.
        stdout: What the code printed (stdout and stderr), capped, with a note when truncated.
        value: ``repr`` of the last expression when the code ends in one (like a REPL), else None.
        error: A short, specific error message when ``ok`` is False, else None.
    """

    ok: bool
    stdout: str
    value: str | None
    error: str | None


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


def run_sandboxed(
    code: str,
    *,
    timeout_s: float = 5.0,
    memory_mb: int = 256,
    max_output: int = MAX_OUTPUT_BYTES,
) -> SandboxResult:
    """Run ``code`` in a sandboxed Python subprocess and report what happened.

    Args:
        code: Python source. If it ends in an expression, its ``repr`` is returned as ``value``.
        timeout_s: Wall-clock limit in seconds; the process group is killed when it runs out.
        memory_mb: Address-space limit of the child process in megabytes.
        max_output: Maximum number of bytes of output kept; the rest is dropped with a note.

    Returns:
        A ``SandboxResult``; failures are reported in ``error``, never raised.
    """
    cpu_s = max(1, int(timeout_s + 0.999)) + 1
    with tempfile.TemporaryDirectory(prefix="aisearch-sandbox-", ignore_cleanup_errors=True) as workdir:
        result_r, result_w = os.pipe()
        cmd = [
            sys.executable, "-I", "-B", str(CHILD),
            str(result_w), str(int(memory_mb)), str(cpu_s), str(max_output),
        ]  # fmt: skip
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=_child_env(workdir),
                pass_fds=(result_w,),
                start_new_session=True,
            )
        except OSError as exc:
            os.close(result_r)
            logger.exception("could not start the sandbox process")
            return SandboxResult(False, "", None, f"could not start the sandbox: {exc}")
        finally:
            os.close(result_w)
        assert proc.stdin is not None and proc.stdout is not None
        out = _Drain(os.dup(proc.stdout.fileno()), max_output)
        res = _Drain(result_r, _MAX_RESULT_BYTES)
        proc.stdout.close()
        out.start()
        res.start()
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
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        out.join(timeout=2.0)
        res.join(timeout=2.0)
    return _build_result(proc.returncode, timed_out, out, res, timeout_s, memory_mb)


def _build_result(
    returncode: int, timed_out: bool, out: _Drain, res: _Drain, timeout_s: float, memory_mb: int
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
    if isinstance(payload, dict):
        logger.debug("sandbox finished (network namespace: %s)", payload.get("netns"))
        if payload.get("kind") == "memory":
            return SandboxResult(False, stdout, None, MEMORY_MSG.format(memory=memory_mb))
        return SandboxResult(bool(payload.get("ok")), stdout, payload.get("value"), payload.get("error"))
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
