"""BFCL's real checker for the tests, when a copy of the pinned wheel is on this machine.

Looked for, in order: ``$AISEARCH_BFCL_WHEEL``, the copy the CLI fetched into the cache
(``<cache>/bfcl/``), ``/tmp/bfcl/``. It is unpacked into a temporary cache; with none of them the
tests that need BFCL's checker skip (``scripts/test.sh`` fetches the wheel once before the tests).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evals.bfcl_fetch import BFCL_SHA256, BFCL_WHEEL, WHEEL_ENV, bfcl_dir, sha256_of

FIXTURE_DATA = Path(__file__).resolve().parent.parent / "fixtures" / "bfcl"


def find_wheel() -> Path | None:
    """A verified copy of the pinned wheel on this machine, or None."""
    candidates = [os.environ.get(WHEEL_ENV, ""), str(bfcl_dir() / BFCL_WHEEL), f"/tmp/bfcl/{BFCL_WHEEL}"]
    for candidate in candidates:
        path = Path(candidate) if candidate else None
        if path and path.is_file() and sha256_of(path) == BFCL_SHA256:
            return path
    return None


@pytest.fixture(scope="session")
def bfcl_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An unpacked BFCL root (data and checker), or skip."""
    wheel = find_wheel()
    if wheel is None:
        pytest.skip(f"no copy of {BFCL_WHEEL} on this machine (BFCL's checker)")
    from evals.bfcl_fetch import ensure_bfcl

    cache = tmp_path_factory.mktemp("bfcl-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AISEARCH_CACHE_DIR", str(cache))
        patch.setenv(WHEEL_ENV, str(wheel))
        return ensure_bfcl()
