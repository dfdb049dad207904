"""Run untrusted Python code in a sandboxed subprocess.

The code runs in a fresh ``sys.executable -I -B`` process, in its own session (process group), with a
fresh temporary directory as its working directory (deleted afterwards). A small bootstrap, passed
with ``-c``, prepares the child before the user code runs:

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

logger = logging.getLogger(__name__)

MAX_OUTPUT_BYTES = 8 * 1024
_MAX_RESULT_BYTES = 64 * 1024

TIMEOUT_MSG = "timed out after {timeout} s"
MEMORY_MSG = "memory limit of {memory} MB exceeded"
NETWORK_MSG = "network access is disabled in the sandbox"
WRITE_MSG = "writing files outside the sandbox directory is not allowed"
SPAWN_MSG = "starting processes is not allowed in the sandbox"


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


# The child's bootstrap. argv: result_fd memory_mb cpu_seconds output_cap. The code comes on stdin.
_BOOTSTRAP_BODY = r"""
import ast, builtins, json, os, resource, signal, socket, sys
import subprocess, _posixsubprocess
try:
    import ctypes
except ImportError:
    ctypes = None

class SandboxViolation(PermissionError):
    pass


def _unshare(flags):
    if hasattr(os, "unshare"):
        try:
            os.unshare(flags)
            return True
        except OSError:
            return False
    if ctypes is None:
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).unshare(flags) == 0
    except Exception:
        return False


def _unshare_net():
    # A private network namespace has only a loopback device that is down: no network at all.
    # Root can create one directly; other users need a user namespace that maps them to themselves.
    if _unshare(0x40000000):  # CLONE_NEWNET
        return True
    uid, gid = os.getuid(), os.getgid()
    if uid == 0 or not _unshare(0x10000000 | 0x40000000):  # CLONE_NEWUSER | CLONE_NEWNET
        return False
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
        except OSError:
            pass
    return True


def _main():
    result_fd, memory_mb, cpu_s, cap = (int(a) for a in sys.argv[1:5])
    code = sys.stdin.buffer.read().decode("utf-8", "replace")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = open(0, closefd=False)
    sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)
    sys.stderr.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)

    root = os.path.realpath(os.getcwd())
    netns = _unshare_net()
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024 * 1024, 64 * 1024 * 1024))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    pid = os.getpid()
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    net_events = {
        "urllib.Request", "http.client.connect", "http.client.send", "ftplib.connect",
        "smtplib.connect", "poplib.connect", "imaplib.open", "nntplib.connect",
        "telnetlib.Telnet.open", "webbrowser.open",
    }
    spawn_events = {
        "subprocess.Popen", "os.system", "os.fork", "os.forkpty", "os.startfile", "pty.spawn",
    }
    spawn_prefixes = ("os.exec", "os.spawn", "os.posix_spawn")
    write_events = {
        "os.mkdir": (0,), "os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1),
        "os.symlink": (1,), "os.link": (0, 1), "os.chmod": (0,), "os.chown": (0,),
        "os.truncate": (0,), "os.utime": (0,), "os.setxattr": (0,), "os.removexattr": (0,),
        "os.chflags": (0,), "os.lchflags": (0,), "os.lchmod": (0,), "shutil.chown": (0,),
        "sqlite3.connect": (0,), "sqlite3.connect/handle": (),
    }
    blocked = {
        "resource.setrlimit", "resource.prlimit", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle",
        "ctypes.call_function", "ctypes.cdata", "ctypes.PyObj_FromPtr", "ctypes.string_at",
        "ctypes.wstring_at", "ctypes.addressof", "sys.remote_exec",
    }

    def inside(path):
        if isinstance(path, int):
            return True
        try:
            real = os.path.realpath(os.fsdecode(os.fspath(path)))
        except (TypeError, ValueError):
            return False
        return real == root or real.startswith(root + os.sep) or real == os.devnull

    def deny(message):
        raise SandboxViolation(message)

    _posixsubprocess.fork_exec = lambda *args: deny(SPAWN_MSG)

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int) or path is None:
                return
            if flags & write_flags:
                if not inside(path):
                    deny(WRITE_MSG)
            elif mode is None and not inside(path) and os.path.isdir(path):
                deny("opening directories outside the sandbox directory is not allowed")
        elif event.startswith("socket."):
            if event == "socket.__new__" and args[1] == socket.AF_UNIX:
                return  # socketpair(), e.g. asyncio's self-pipe; connect/bind are still refused
            deny(NETWORK_MSG)
        elif event in net_events:
            deny(NETWORK_MSG)
        elif event in spawn_events or event.startswith(spawn_prefixes):
            deny(SPAWN_MSG)
        elif event in write_events:
            if event.startswith("sqlite3.") and (not args or args[0] in (":memory:", b":memory:", "")):
                return
            for i in write_events[event]:
                if i < len(args) and args[i] is not None and not inside(args[i]):
                    deny(WRITE_MSG)
        elif event in ("os.kill", "os.killpg"):
            if args[0] not in (pid, 0):
                deny("signalling other processes is not allowed in the sandbox")
        elif event == "import" and args[0] == "_posixsubprocess":
            deny(SPAWN_MSG)
        elif event in blocked:
            deny(f"{event} is not allowed in the sandbox")

    sys.addaudithook(hook)
    del hook

    result = {"ok": True, "value": None, "error": None, "kind": None, "netns": netns}
    ns = {"__name__": "__main__", "__builtins__": builtins}
    try:
        tree = ast.parse(code, "<sandbox>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<sandbox>", "exec"), ns)
        if last is not None:
            value = eval(compile(last, "<sandbox>", "eval"), ns)
            if value is not None:
                text = repr(value)
                if len(text) > cap:
                    text = text[:cap] + f"... [value truncated: {len(text) - cap} more characters]"
                result["value"] = text
    except MemoryError:
        ns.clear()
        result.update(ok=False, kind="memory")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            result.update(ok=False, kind="error", error=f"SystemExit: {exc.code}")
    except BaseException as exc:
        ns.clear()
        line = None
        if isinstance(exc, SyntaxError) and exc.filename == "<sandbox>":
            line = exc.lineno
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<sandbox>":
                line = tb.tb_lineno
            tb = tb.tb_next
        cause, seen = exc, 0
        while cause is not None and not isinstance(cause, SandboxViolation) and seen < 20:
            cause, seen = cause.__cause__ or cause.__context__, seen + 1
        if isinstance(cause, SandboxViolation):
            message, kind = str(cause), "violation"
        else:
            detail = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            message = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            kind = "error"
        if len(message) > 500:
            message = message[:500] + "..."
        if line:
            message += f" (line {line})"
        result.update(ok=False, kind=kind, error=message)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    try:
        os.write(result_fd, json.dumps(result).encode())
    except BaseException:
        pass
    os._exit(0)


_main()
"""
_BOOTSTRAP = (
    f"NETWORK_MSG = {NETWORK_MSG!r}\nWRITE_MSG = {WRITE_MSG!r}\nSPAWN_MSG = {SPAWN_MSG!r}\n" + _BOOTSTRAP_BODY
)


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
            sys.executable, "-I", "-B", "-c", _BOOTSTRAP,
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
