"""The sandbox's operating-system layer (standard library only; loaded by ``sandbox_child.py``).

Each function is one mechanism of the boundary and reports what it could not do instead of raising,
so the child can run with what the OS allows and say what is missing:

* ``enter_namespaces``: new PID, mount, network and IPC namespaces (plus a user namespace when not
  root): System V shared memory and message queues die with the run and never cross runs;
* ``hide_filesystem``: in the new mount namespace, a fresh ``/proc``, tmpfs over every top-level
  directory except the system ones, the Python installation bound back read-only and a private
  tmpfs as the working directory;
* ``drop_privileges``: root becomes ``nobody``; inside a user namespace every capability is dropped;
* ``join_cgroup``: the run's memory cgroup, made by the server (``sandbox_cgroup.py``);
* ``kill_first_when_out_of_memory``: the run is the out-of-memory killer's first choice;
* ``set_limits``: ``RLIMIT_AS``, ``CPU``, ``FSIZE``, ``NOFILE``, ``NPROC``, ``CORE`` = 0;
* ``forbid_exec_and_fork``: a seccomp filter that makes ``execve``/``execveat``, process-creating
  ``clone``/``fork``/``vfork``, ``unshare``, ``setns``, ``ptrace``, ``memfd_create``,
  ``memfd_secret`` and ``io_uring`` fail with ``EPERM`` (threads still work), and every socket but
  ``AF_UNIX`` with ``EAFNOSUPPORT``.
"""

import ctypes
import os
import platform
import resource
import signal
import struct
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
CLONE_NEWIPC = 0x08000000
CLONE_THREAD = 0x00010000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 22, 38, 36
NOBODY = 65534
SYSTEM_DIRS = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc"}

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, arg: int = 0) -> None:
    """``prctl(option, arg, 0, 0, 0)``; raises OSError on failure."""
    _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    _check(_libc.prctl(option, arg, 0, 0, 0), f"prctl({option})")


def die_with_parent(expected_parent: int, sig: int = signal.SIGKILL) -> None:
    """Get ``sig`` when the parent dies; exit at once if it already has (``expected_parent`` is gone)."""
    prctl(PR_SET_PDEATHSIG, sig)
    if os.getppid() != expected_parent:
        os._exit(1)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _libc.mount.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_char_p,
    ]
    enc = [None if s is None else os.fsencode(s) for s in (source, target, fstype, data)]
    _check(_libc.mount(enc[0], enc[1], enc[2], flags, enc[3]), f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def enter_namespaces() -> tuple[bool, str | None]:
    """Move this process into new mount, network and IPC namespaces; its next child starts a PID one.

    Root unshares them directly; another user first creates a user namespace in which it is root
    (mapped to itself), which unprivileged users may do where the kernel allows it.

    Returns:
        ``(True, None)``, or ``(False, reason)`` when the kernel refuses (nothing was changed then).
    """
    flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    try:
        _check(
            _libc.unshare(flags),
            "unshare(CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWNET|CLONE_NEWIPC"
            + ("|CLONE_NEWUSER)" if uid else ")"),
        )
        if uid != 0:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"0 {uid} 1")
            _write("/proc/self/gid_map", f"0 {gid} 1")
    except OSError as exc:
        return False, str(exc)
    return True, None


def _needed_dirs() -> list[str]:
    """The directories the interpreter reads after the mounts: its installation (stdlib, extensions,
    site-packages), never the project or anything else that happens to be on ``sys.path``."""
    roots = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    dirs = sorted(roots | {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)})
    inside = [d for d in dirs if any(d == r or d.startswith(r + os.sep) for r in roots)]
    return [d for d in inside if not any(d.startswith(o + os.sep) for o in inside) and d != "/"]


def _hidden_top_level() -> list[str]:
    return [
        "/" + name
        for name in sorted(os.listdir("/"))
        if name not in SYSTEM_DIRS and not os.path.islink("/" + name)
    ]


def hide_filesystem(workdir: str, owner: int, workdir_mb: int) -> None:
    """Make the files of the machine invisible, except the system directories and Python itself.

    Must run as the first process (root or root in a user namespace) of the new PID and mount
    namespaces. ``workdir`` becomes a private tmpfs of ``workdir_mb`` MB owned by uid ``owner``.

    Raises:
        OSError: When a mount fails (the caller then refuses to run the code).
    """
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates to the host
    keep = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in _needed_dirs()}
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    hidden = _hidden_top_level()
    for path in hidden:
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,mode=0755")
        elif os.path.exists(path):
            _mount("/dev/null", path, None, MS_BIND)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,mode=1777")
    for path, fd in keep.items():
        if any(path == h or path.startswith(h + os.sep) for h in hidden):
            os.makedirs(path, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
            extra = os.statvfs(path).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | extra)
        os.close(fd)
    os.makedirs(workdir, exist_ok=True)
    options = f"size={workdir_mb}m,mode=0700,uid={owner},gid={owner}"
    _mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)


def join_cgroup(directory: str) -> None:
    """Move this process, and so everything it starts, into the cgroup ``directory``."""
    _write(os.path.join(directory, "cgroup.procs"), str(os.getpid()))


def sandbox_uid() -> int:
    """The uid the code runs as: ``nobody`` when started as root, else the current uid."""
    return NOBODY if os.getuid() == 0 else os.getuid()


def drop_privileges(in_user_namespace: bool) -> None:
    """Leave no privilege to the code: root becomes ``nobody``; in a user namespace, no capability.

    ``no_new_privs`` is set too, so no exec (were one allowed) could gain any.
    """
    if os.getuid() == 0 and not in_user_namespace:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    elif in_user_namespace:
        cap = 0
        while True:
            try:
                prctl(PR_CAPBSET_DROP, cap)
            except OSError:
                break
            cap += 1
        header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = ctypes.create_string_buffer(24)  # two zeroed {effective, permitted, inheritable}
        _check(_libc.capset(ctypes.c_char_p(header), data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def kill_first_when_out_of_memory() -> None:
    """The out-of-memory killer takes this process and its children before any other of the host.

    Must run before a change of credentials or ``PR_SET_DUMPABLE`` makes ``/proc/self`` root's.
    """
    _write("/proc/self/oom_score_adj", "1000")


def set_limits(memory_mb: int, cpu_s: int, file_mb: int, nproc: int, nofile: int) -> None:
    """Resource limits of this process and everything it starts (soft = hard: they cannot be raised)."""
    for name, value in (
        ("RLIMIT_AS", memory_mb * 1024 * 1024),
        ("RLIMIT_FSIZE", file_mb * 1024 * 1024),
        ("RLIMIT_NOFILE", nofile),
        ("RLIMIT_NPROC", nproc),
        ("RLIMIT_CORE", 0),
    ):
        resource.setrlimit(getattr(resource, name), (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))


# machine: (AUDIT_ARCH, clone, clone3, socket, socketpair, the calls that always fail: execve,
# execveat, fork, vfork, unshare, setns, ptrace, memfd_create, memfd_secret, io_uring_setup,
# io_uring_enter, io_uring_register)
_IO_URING = (425, 426, 427)  # its operations open sockets and files past this filter
_SYSCALLS = {
    "x86_64": (0xC000003E, 56, 435, 41, 53, (59, 322, 57, 58, 272, 308, 101, 319, 447, *_IO_URING)),
    "aarch64": (0xC00000B7, 220, 435, 198, 199, (221, 281, 97, 268, 117, 279, 447, *_IO_URING)),
}
AF_UNIX, EPERM, ENOSYS, EAFNOSUPPORT = 1, 1, 38, 97


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def _filter(machine: str) -> list[bytes]:
    """The seccomp program (classic BPF) for ``machine``."""
    arch, clone, clone3, sock, sockpair, denied = _SYSCALLS[machine]
    ld_w_abs, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, errno = 0x7FFF0000, 0x00050000
    prog = [_bpf(ld_w_abs, 4), _bpf(jeq, arch, 1, 0), _bpf(ret, errno | EPERM), _bpf(ld_w_abs, 0)]
    prog.append(_bpf(jge, 0x40000000, 0, 1))  # x32 system calls on x86_64
    prog.append(_bpf(ret, errno | EPERM))
    for nr in denied:
        prog += [_bpf(jeq, nr, 0, 1), _bpf(ret, errno | EPERM)]
    prog += [_bpf(jeq, clone3, 0, 1), _bpf(ret, errno | ENOSYS)]
    # socket, socketpair: only AF_UNIX (the first argument); the call's number is then gone
    for nr in (sock, sockpair):
        prog += [_bpf(jeq, nr, 0, 4), _bpf(ld_w_abs, 16), _bpf(jeq, AF_UNIX, 0, 1), _bpf(ret, allow)]
        prog.append(_bpf(ret, errno | EAFNOSUPPORT))
    # clone: a thread (CLONE_THREAD in the first argument) is allowed, a new process is not
    prog += [_bpf(jeq, clone, 0, 4), _bpf(ld_w_abs, 16), _bpf(jset, CLONE_THREAD, 0, 1), _bpf(ret, allow)]
    prog += [_bpf(ret, errno | EPERM), _bpf(ret, allow)]
    return prog


def forbid_exec_and_fork() -> str | None:
    """Install a seccomp filter: exec and process creation fail with EPERM, threads still start.

    ``unshare``, ``setns`` and ``ptrace`` fail too: no new (user) namespace in which to regain
    capabilities, no tracing of another process. So do ``memfd_create`` and ``memfd_secret``
    (memory that no address-space limit counts) and ``io_uring`` (whose operations bypass the
    filter). ``socket`` and ``socketpair`` fail with EAFNOSUPPORT for every family but
    ``AF_UNIX`` (no ``AF_VSOCK`` to the hypervisor, no netlink, no packet socket).

    ``clone3`` answers ENOSYS so the C library falls back to ``clone``, whose flags the filter can
    read. Needs ``no_new_privs`` (``drop_privileges`` sets it).

    Returns:
        None, or why no filter could be installed (an unknown CPU architecture, no seccomp).
    """
    machine = platform.machine()
    if machine not in _SYSCALLS:
        return f"no seccomp filter for the {machine} architecture"
    prog = _filter(machine)
    filters = ctypes.create_string_buffer(b"".join(prog))
    fprog = struct.pack("HxxxxxxQ", len(prog), ctypes.addressof(filters))
    try:
        _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_ulong]
        _check(_libc.prctl(PR_SET_SECCOMP, 2, fprog, 0, 0), "prctl(PR_SET_SECCOMP)")
    except OSError as exc:
        return str(exc)
    finally:
        _libc.prctl.argtypes = None  # type: ignore[assignment]  # ctypes takes None (no checking); typeshed does not say so
    return None
