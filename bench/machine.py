"""The one-line description of the machine that every benchmark report carries."""

from __future__ import annotations

import os
import platform


def machine_line() -> str:
    """``x86_64, 2 cores, Python 3.11.7``."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
