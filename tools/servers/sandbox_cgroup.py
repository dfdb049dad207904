"""A memory cgroup per sandboxed run: all the memory the run holds counts against its limit.

``RLIMIT_AS`` bounds each process's address space, but not memory that outlives a mapping (a
``memfd``, a tmpfs file, a System V segment). A memory cgroup counts every page the run charges,
shared or not, and swap is not a way out. The server creates one per run (cgroup v2 where the
memory controller is delegated to the server's own cgroup, else the v1 memory hierarchy), the
sandbox's supervisor moves itself into it before it starts the code, and the server removes it
after the run (or, when it was killed first, the next run removes it). Where none can be made (no controller, no permission), ``create`` says why and the
run goes on without it: the seccomp filter and the private tmpfs mounts still bound what they
can (see ``docs/security.md``).
"""

from __future__ import annotations

import contextlib
import errno
import time
import uuid
from pathlib import Path

PREFIX = "aisearch-sandbox-"
STALE_S = 60.0  # an empty run cgroup this old lost its server (killed before it could remove it)
_MOUNTINFO = Path("/proc/self/mountinfo")
_CGROUP = Path("/proc/self/cgroup")


def _mounts() -> list[tuple[str, str, str]]:
    """``(mount point, file system type, super options)`` of every mount of this process."""
    mounts = []
    for line in _MOUNTINFO.read_text().splitlines():
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) >= 5 and len(rest) >= 3:
            mounts.append((fields[4].replace("\\040", " "), rest[0], rest[2]))
    return mounts


def _own_paths() -> dict[str, str]:
    """This process's cgroup per hierarchy: ``""`` for v2, ``"memory"`` for the v1 memory one."""
    paths = {}
    for line in _CGROUP.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _parent_dir() -> tuple[Path, int] | str:
    """The cgroup under which to create the run's own, with its version, or why there is none."""
    own, mounts = _own_paths(), _mounts()
    reasons = []
    for point, fstype, options in mounts:
        if fstype == "cgroup2" and "" in own:
            base = Path(point) / own[""].lstrip("/")
            try:
                delegated = "memory" in (base / "cgroup.subtree_control").read_text().split()
            except OSError as exc:
                reasons.append(f"cannot read {base}: {exc.strerror}")
                continue
            if delegated:
                return base, 2
            reasons.append(f"the memory controller is not enabled for the children of {base}")
        elif fstype == "cgroup" and "memory" in options.split(",") and "memory" in own:
            return Path(point) / own["memory"].lstrip("/"), 1
    return "; ".join(reasons) or "no memory cgroup hierarchy is mounted"


def create(limit_mb: int) -> tuple[Path | None, str | None]:
    """Make a memory cgroup of ``limit_mb`` MB with no swap for one run.

    Returns:
        ``(its directory, None)``, or ``(None, why)`` when none could be made (nothing is left).
    """
    try:
        found = _parent_dir()
    except OSError as exc:
        return None, f"cannot read this process's cgroups: {exc}"
    if isinstance(found, str):
        return None, found
    parent, version = found
    _remove_stale(parent)
    path = parent / f"{PREFIX}{uuid.uuid4().hex[:12]}"
    limit = str(limit_mb * 1024 * 1024)
    try:
        path.mkdir()
    except OSError as exc:
        return None, f"cannot create a cgroup in {parent}: {exc.strerror}"
    try:
        if version == 2:
            (path / "memory.max").write_text(limit)
            swap = path / "memory.swap.max"
        else:
            (path / "memory.limit_in_bytes").write_text(limit)
            swap = path / "memory.memsw.limit_in_bytes"  # memory + swap, where swap is accounted
        if swap.exists():
            swap.write_text("0" if version == 2 else limit)
    except OSError as exc:
        remove(path)
        return None, f"cannot set the memory limit of {path}: {exc.strerror}"
    return path, None


def _remove_stale(parent: Path) -> None:
    """Remove the empty run cgroups a killed server left behind (one with processes stays: EBUSY)."""
    now = time.time()
    for path in parent.glob(PREFIX + "*"):
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > STALE_S:
                path.rmdir()


def oom_killed(path: Path) -> bool:
    """Whether the kernel killed a process of the cgroup for going over its memory limit."""
    for name in ("memory.events", "memory.oom_control"):
        with contextlib.suppress(OSError):
            for line in (path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip() not in ("", "0"):
                    return True
    return False


def remove(path: Path, within: float = 2.0) -> None:
    """Remove the cgroup once the run's last process has left it (busy until the kernel reaps it)."""
    deadline = time.monotonic() + within
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
        time.sleep(0.02)
