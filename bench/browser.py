"""Debian's Chromium driven by Playwright, never a browser Playwright downloads: the search page's
benchmark (``aisearch bench page``) and its browser tests launch it here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
MISSING = f"{CHROMIUM} is missing (Debian: apt-get install chromium)"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launch_chromium(playwright: Any, profile_dir: Path | str, **options: Any) -> Any:
    """Headless Chromium with a persistent profile in ``profile_dir``: a Playwright ``BrowserContext``.

    Args:
        playwright: The object ``sync_playwright()`` yields.
        profile_dir: A fresh directory for the profile.
        **options: More options of ``launch_persistent_context`` (``viewport=…``).
    """
    return playwright.chromium.launch_persistent_context(
        str(profile_dir), executable_path=str(CHROMIUM), headless=True, args=FLAGS, **options
    )
