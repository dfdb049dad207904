"""The sandbox's interpreter layer: an audit hook (PEP 578) that refuses what the code should not do.

Loaded by ``sandbox_child.py`` (standard library only). The hook is a tripwire with clear messages
("network access is disabled in the sandbox"), not the boundary: the operating-system layer
(``sandbox_os.py``) holds when the hook is bypassed. Its tables are immutable and captured in the
hook's closure when it is installed, so the code cannot empty or rebind them through the frames
it can see (``sys._getframe(1).f_locals``) or through this module; the hook object itself is
reachable only through heap walking (``gc``) or raw memory (``ctypes``), which it refuses. It
still relies on the Python functions it calls (``os.path.realpath``), which code could replace.
"""

import _posixsubprocess
import os
import socket
import sys
from types import MappingProxyType
from typing import Any, NoReturn

NETWORK_MSG = "network access is disabled in the sandbox"
WRITE_MSG = "writing files outside the sandbox directory is not allowed"
SPAWN_MSG = "starting processes is not allowed in the sandbox"

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_NET_EVENTS = frozenset({
    "urllib.Request", "http.client.connect", "http.client.send", "ftplib.connect", "smtplib.connect",
    "poplib.connect", "imaplib.open", "nntplib.connect", "telnetlib.Telnet.open", "webbrowser.open",
})  # fmt: skip
_SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.fork", "os.forkpty", "os.startfile", "pty.spawn"}
)
_SPAWN_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn")
_WRITE_EVENTS = MappingProxyType({
    "os.mkdir": (0,), "os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1), "os.symlink": (1,),
    "os.link": (0, 1), "os.chmod": (0,), "os.chown": (0,), "os.truncate": (0,), "os.utime": (0,),
    "os.setxattr": (0,), "os.removexattr": (0,), "os.chflags": (0,), "os.lchflags": (0,),
    "os.lchmod": (0,), "shutil.chown": (0,), "sqlite3.connect": (0,), "sqlite3.connect/handle": (),
})  # fmt: skip
_BLOCKED = frozenset({
    "resource.setrlimit", "resource.prlimit", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function", "ctypes.cdata",
    "ctypes.PyObj_FromPtr", "ctypes.string_at", "ctypes.wstring_at", "ctypes.addressof",
    "sys.remote_exec",
})  # fmt: skip


class SandboxViolation(PermissionError):
    """An action the sandbox refuses."""


def install(root: str, pid: int) -> None:
    """Install the audit hook for code whose only writable place is the directory ``root``.

    Args:
        root: The sandbox's working directory (real path).
        pid: This process's id (the code may signal itself, no other process).
    """
    write_flags, af_unix, realpath, isdir, fsdecode, fspath, path_like, sep, devnull = (
        _WRITE_FLAGS,
        socket.AF_UNIX,
        os.path.realpath,
        os.path.isdir,
        os.fsdecode,
        os.fspath,
        os.PathLike,
        os.sep,
        os.devnull,
    )
    net_events, spawn_events, spawn_prefixes, write_events, blocked = (
        _NET_EVENTS,
        _SPAWN_EVENTS,
        _SPAWN_PREFIXES,
        _WRITE_EVENTS,
        _BLOCKED,
    )

    def inside(path: object) -> bool:
        if isinstance(path, int):
            return True
        if not isinstance(path, (str, bytes, path_like)):
            return False
        try:
            real = realpath(fsdecode(fspath(path)))
        except (TypeError, ValueError):
            return False
        return real == root or real.startswith(root + sep) or real == devnull

    def deny(message: str) -> NoReturn:
        raise SandboxViolation(message)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int) or path is None:
                return
            if flags & write_flags:
                if not inside(path):
                    deny(WRITE_MSG)
            elif mode is None and not inside(path) and isdir(path):
                deny("opening directories outside the sandbox directory is not allowed")
        elif event.startswith("socket."):
            if event == "socket.__new__" and args[1] == af_unix:
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

    _posixsubprocess.fork_exec = lambda *args: deny(SPAWN_MSG)
    sys.addaudithook(hook)
