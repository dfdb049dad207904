"""Memory no address-space limit counts, System V IPC and socket families: bounded at the OS layer.

Each test turns the audit hook off, or has the code defeat it first (each runs both ways), and
some the seccomp filter too, so only the operating system's layers stand: the run's memory
cgroup, the private tmpfs mounts, the IPC namespace and the seccomp filter. Where the kernel refuses a mechanism, the run says so (``missing``) and the
tests of that mechanism skip; the degradation itself is tested with the mechanism taken away.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest

from tests.support.sandbox_layers import hook_layer, needs_namespaces  # noqa: F401
from tools.servers import sandbox, sandbox_cgroup
from tools.servers.sandbox import run_sandboxed

OS_ONLY = {"audit_hook": False}
NO_FILTERS = {"audit_hook": False, "seccomp": False}
MEMORY_MB = 128


def _cgroup_refused() -> str | None:
    path, why = sandbox_cgroup.create(16)
    if path is not None:
        sandbox_cgroup.remove(path)
    return why


NO_CGROUP = _cgroup_refused()
needs_cgroup = pytest.mark.skipif(
    NO_CGROUP is not None, reason=f"no memory cgroup here ({NO_CGROUP}); the degradation test covers it"
)

# Each grabs 16 MB at a time, up to 640 MB, keeping it all; prints how far it got. Without namespaces
# the code imports nothing new: the interpreter's directory may be closed to nobody (/root/.pyenv).
GRAB = {
    "memfd": "fd = os.memfd_create(f'm{i}')\nos.write(fd, CHUNK)\nkept.append(fd)",
    "dev-shm": "fd = os.open(f'/dev/shm/m{i}', os.O_CREAT | os.O_WRONLY, 0o600)\nos.write(fd, CHUNK)\n"
    "os.close(fd)",
    "mmap-shared-anonymous": "import mmap\nm = mmap.mmap(-1, len(CHUNK), flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)\n"
    "m.write(CHUNK)\nkept.append(m)",
}


def _grab_code(kind: str) -> str:
    body = "".join("        " + line + "\n" for line in GRAB[kind].splitlines())
    return (
        "import os\n"
        "CHUNK, kept, grabbed = b'x' * (16 << 20), [], 0\n"
        "try:\n"
        "    for i in range(40):\n" + body + "        grabbed += 16\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
        "grabbed"
    )


def _bounded(result: sandbox.SandboxResult, limit_mb: int) -> bool:
    """The run got no more than ``limit_mb`` MB: stopped by the limit, or refused on the way."""
    if result.error is not None:
        return result.error == f"memory limit of {limit_mb} MB exceeded"
    return result.value is not None and int(result.value) <= limit_mb


@needs_namespaces
@pytest.mark.parametrize("kind", sorted(GRAB))
def test_shared_memory_is_bounded_without_the_hook(kind: str) -> None:
    result = run_sandboxed(_grab_code(kind), memory_mb=MEMORY_MB, timeout_s=10, **OS_ONLY)
    assert _bounded(result, MEMORY_MB), result


def test_memfd_is_refused_by_the_seccomp_filter() -> None:
    result = run_sandboxed(_grab_code("memfd"), memory_mb=MEMORY_MB, namespaces=False, **OS_ONLY)
    assert result.ok, result.error
    assert (result.stdout, result.value) == ("refused 1\n", "0")  # EPERM before the first byte


@needs_cgroup
@pytest.mark.parametrize(
    "kind, namespaces",
    [("memfd", True), ("memfd", False), ("mmap-shared-anonymous", True), ("dev-shm", True)],
)  # without namespaces /dev/shm is the host's, whose files would outlive the run
def test_the_memory_cgroup_alone_counts_shared_memory(kind: str, namespaces: bool) -> None:
    """No hook, no seccomp filter (memfd allowed)."""
    result = run_sandboxed(
        _grab_code(kind), memory_mb=MEMORY_MB, timeout_s=10, namespaces=namespaces, **NO_FILTERS
    )
    assert _bounded(result, MEMORY_MB), result
    assert not any("cgroup" in m for m in result.missing)


@needs_cgroup
def test_the_run_leaves_no_cgroup_behind() -> None:
    path, _ = sandbox_cgroup.create(16)
    assert path is not None
    sandbox_cgroup.remove(path)
    before = sorted(path.parent.glob(sandbox_cgroup.PREFIX + "*"))
    run_sandboxed("'x' * 1000", **OS_ONLY)
    run_sandboxed(_grab_code("memfd"), memory_mb=MEMORY_MB, **NO_FILTERS)
    assert sorted(path.parent.glob(sandbox_cgroup.PREFIX + "*")) == before


@needs_cgroup
def test_a_cgroup_left_by_a_killed_server_is_removed_by_the_next_run(monkeypatch) -> None:
    left, _ = sandbox_cgroup.create(16)  # as if the server had been killed during the run
    assert left is not None and left.is_dir()
    monkeypatch.setattr(sandbox_cgroup, "STALE_S", -1.0)  # instead of waiting a minute
    assert run_sandboxed("1", **OS_ONLY).ok
    assert not left.exists()


def test_without_a_memory_cgroup_the_run_says_so_and_memfd_stays_refused(
    tmp_path: Path, monkeypatch, caplog
) -> None:
    """A kernel without a usable memory controller: warned once; seccomp and tmpfs sizes still hold."""
    hierarchy = tmp_path / "cgroup2"
    hierarchy.mkdir()
    (hierarchy / "cgroup.subtree_control").write_text("cpu io\n")  # memory not delegated
    (tmp_path / "mountinfo").write_text(f"25 1 0:22 / {hierarchy} rw - cgroup2 cgroup2 rw\n")
    (tmp_path / "cgroup").write_text("0::/\n")
    monkeypatch.setattr(sandbox_cgroup, "_MOUNTINFO", tmp_path / "mountinfo")
    monkeypatch.setattr(sandbox_cgroup, "_CGROUP", tmp_path / "cgroup")
    monkeypatch.setattr(sandbox, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="tools.servers.sandbox"):
        first = run_sandboxed(_grab_code("memfd"), memory_mb=MEMORY_MB, **OS_ONLY)
        second = run_sandboxed("1", **OS_ONLY)
    expected = f"no memory cgroup (the memory controller is not enabled for the children of {hierarchy})"
    assert expected in first.missing and expected in second.missing
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len([w for w in warned if expected in w and "WEAKER" in w]) == 1
    assert (first.stdout, first.value) == ("refused 1\n", "0")
    assert list(hierarchy.iterdir()) == [hierarchy / "cgroup.subtree_control"]


def _sysv(call: str, key: int) -> str:
    """Code that runs one System V step on ``key`` through libc and prints what happened."""
    steps = {
        "write": "shm = libc.shmget(KEY, 4096, 0o1666)\n"  # IPC_CREAT | 0666
        "ctypes.memmove(libc.shmat(shm, None, 0), b'run-one-was-here', 16)\n"
        "q = libc.msgget(KEY, 0o1666)\nmsg = struct.pack('l', 1) + b'hello'\n"
        "print('wrote', shm >= 0, libc.msgsnd(q, msg, 5, 0) == 0)",
        "read": "print('segment', libc.shmget(KEY, 0, 0), 'queue', libc.msgget(KEY, 0))",
    }
    return (
        "import ctypes, struct\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.shmat.restype = ctypes.c_void_p\n"
        f"KEY = {key}\n" + steps[call]
    )


def _host_sysv_keys() -> set[int]:
    keys = set()
    for name in ("shm", "msg"):
        lines = Path(f"/proc/sysvipc/{name}").read_text().splitlines()[1:]
        keys |= {int(line.split()[0]) for line in lines}
    return keys


@needs_namespaces
def test_system_v_objects_neither_outlive_a_run_nor_cross_runs() -> None:
    key = random.randrange(1 << 20, 1 << 30)
    wrote = run_sandboxed(_sysv("write", key), **OS_ONLY)
    assert wrote.stdout == "wrote True True\n", wrote
    assert key not in _host_sysv_keys()
    read = run_sandboxed(_sysv("read", key), **OS_ONLY)
    assert read.stdout == "segment -1 queue -1\n", read  # ENOENT: a fresh IPC namespace


FAMILIES = {"AF_INET": 2, "AF_INET6": 10, "AF_VSOCK": 40, "AF_NETLINK": 16, "AF_PACKET": 17}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("call", ["socket", "socketpair"])
def test_every_socket_family_but_unix_is_refused_without_the_hook(family: str, call: str) -> None:
    code = f"import socket\nsocket.{call}({FAMILIES[family]}, socket.SOCK_DGRAM)"
    result = run_sandboxed(code, namespaces=False, **OS_ONLY)
    assert not result.ok
    assert "[Errno 97]" in result.error, result.error  # EAFNOSUPPORT from the seccomp filter


def test_unix_sockets_still_work_inside() -> None:
    code = "import socket\na, b = socket.socketpair()\na.sendall(b'ping')\nb.recv(4)"
    result = run_sandboxed(code, **OS_ONLY)
    assert result.ok, result.error
    assert result.value == "b'ping'"


def test_io_uring_is_refused() -> None:
    """Its operations (socket, openat) would run past the filter's checks."""
    code = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "params = ctypes.create_string_buffer(120)\n"
        "print(libc.syscall(425, 8, params), ctypes.get_errno())"
    )
    result = run_sandboxed(code, namespaces=False, **OS_ONLY)
    assert result.stdout == "-1 1\n", result
