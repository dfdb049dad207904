"""The sandbox's child program: ``python -I -B sandbox_child.py RESULT_FD MEMORY_MB CPU_S OUTPUT_CAP``.

``tools/servers/sandbox.py`` starts this file in a fresh process (``-I``: nothing of the project or
the user's site is importable, so it uses the standard library only) and writes the untrusted code
to its stdin. Before running the code the child drops its network (a private network namespace
when the kernel allows it), sets resource limits and installs an audit hook that refuses network
access, writes outside its working directory, process creation and the like. It runs the code like
a REPL (the value of a final expression is returned) and writes a JSON result to ``RESULT_FD``.
"""

import _posixsubprocess
import ast
import builtins
import json
import os
import resource
import signal
import socket
import subprocess  # noqa: F401 - loaded before the audit hook, which refuses importing _posixsubprocess
import sys

try:
    import ctypes
except ImportError:
    ctypes = None

NETWORK_MSG = "network access is disabled in the sandbox"
WRITE_MSG = "writing files outside the sandbox directory is not allowed"
SPAWN_MSG = "starting processes is not allowed in the sandbox"


class SandboxViolation(PermissionError):
    """An action the sandbox refuses."""


def _unshare(flags: int) -> bool:
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


def _unshare_net() -> bool:
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


def main() -> None:
    """Prepare the sandbox, run the code from stdin, write the result to the result pipe, exit."""
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
        "urllib.Request",
        "http.client.connect",
        "http.client.send",
        "ftplib.connect",
        "smtplib.connect",
        "poplib.connect",
        "imaplib.open",
        "nntplib.connect",
        "telnetlib.Telnet.open",
        "webbrowser.open",
    }
    spawn_events = {
        "subprocess.Popen",
        "os.system",
        "os.fork",
        "os.forkpty",
        "os.startfile",
        "pty.spawn",
    }
    spawn_prefixes = ("os.exec", "os.spawn", "os.posix_spawn")
    write_events = {
        "os.mkdir": (0,),
        "os.remove": (0,),
        "os.rmdir": (0,),
        "os.rename": (0, 1),
        "os.symlink": (1,),
        "os.link": (0, 1),
        "os.chmod": (0,),
        "os.chown": (0,),
        "os.truncate": (0,),
        "os.utime": (0,),
        "os.setxattr": (0,),
        "os.removexattr": (0,),
        "os.chflags": (0,),
        "os.lchflags": (0,),
        "os.lchmod": (0,),
        "shutil.chown": (0,),
        "sqlite3.connect": (0,),
        "sqlite3.connect/handle": (),
    }
    blocked = {
        "resource.setrlimit",
        "resource.prlimit",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "ctypes.dlopen",
        "ctypes.dlsym",
        "ctypes.dlsym/handle",
        "ctypes.call_function",
        "ctypes.cdata",
        "ctypes.PyObj_FromPtr",
        "ctypes.string_at",
        "ctypes.wstring_at",
        "ctypes.addressof",
        "sys.remote_exec",
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


if __name__ == "__main__":
    main()
