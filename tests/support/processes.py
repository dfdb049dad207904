"""Stopping the server subprocesses that tests start, and finding the ones left behind."""

from __future__ import annotations

import subprocess
from pathlib import Path


def stop_process(proc: subprocess.Popen, timeout_s: float = 10) -> None:
    """Terminate ``proc``; kill it if it has not exited within ``timeout_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def processes_with(marker: str) -> list[int]:
    """Ids of the live processes whose command line contains ``marker`` (read from ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:  # gone meanwhile
            continue
        if marker.encode() in cmdline.replace(b"\0", b" "):
            found.append(int(entry.name))
    return found
