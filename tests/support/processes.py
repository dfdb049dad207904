"""Stopping the server subprocesses that tests start."""

from __future__ import annotations

import subprocess


def stop_process(proc: subprocess.Popen, timeout_s: float = 10) -> None:
    """Terminate ``proc``; kill it if it has not exited within ``timeout_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
