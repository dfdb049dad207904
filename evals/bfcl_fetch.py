"""BFCL's data and AST checker, fetched once from PyPI and unpacked under the cache.

The Berkeley Function Calling Leaderboard ships on PyPI as ``bfcl-eval``. Its dependency pins
(numpy, filelock, networkx, vLLM extras, a dozen API clients) fight the project's own, so it is
never installed: the pinned wheel is fetched with ``pip download --no-deps`` into
``<cache>/bfcl/`` (``$AISEARCH_CACHE_DIR`` or ``~/.cache/aisearch``), checked against the sha256
pinned here, and only its data files and the few modules the AST checker needs are unpacked to
``<cache>/bfcl/<version>/``. ``$AISEARCH_BFCL_WHEEL`` names a wheel you downloaded yourself (it is
checked against the same digest). A stamp file marks a finished unpacking, so later runs return at
once; a file lock keeps two runs from fetching at the same time.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from filelock import FileLock

from core.settings_groups import EvalSettings
from models.assemble import cache_dir
from models.env_settings import env_names, load_group

log = logging.getLogger(__name__)

BFCL_PACKAGE = "bfcl-eval"
BFCL_VERSION = "2026.3.23"
BFCL_WHEEL = f"bfcl_eval-{BFCL_VERSION}-py3-none-any.whl"
BFCL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
WHEEL_ENV = env_names(EvalSettings, "bfcl_wheel")[0]
PIP_TIMEOUT_S = 600.0
STAMP = ".unpacked"

# what is unpacked: the data (questions and possible answers) and the checker with its imports
KEEP_PREFIXES = (
    "bfcl_eval/data/BFCL_v4_",
    "bfcl_eval/data/possible_answer/BFCL_v4_",
    "bfcl_eval/eval_checker/ast_eval/",
    "bfcl_eval/constants/enums.py",
    "bfcl_eval/constants/type_mappings.py",
)


class BfclDataError(ValueError):
    """BFCL's data or checker cannot be had (no network to PyPI, a bad wheel, a missing file)."""


def bfcl_dir() -> Path:
    """``<cache>/bfcl``: the wheel and its unpacked files."""
    return cache_dir() / "bfcl"


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download(target_dir: Path) -> Path:
    """``pip download --no-deps`` the pinned wheel into ``target_dir``; its path.

    Raises:
        BfclDataError: When pip fails (no network, no such version) or leaves no wheel.
    """
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--no-input", "--dest", str(target_dir),
        f"{BFCL_PACKAGE}=={BFCL_VERSION}",
    ]  # fmt: skip
    log.info("fetching %s==%s from PyPI (once)", BFCL_PACKAGE, BFCL_VERSION)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BfclDataError(f"could not fetch BFCL data ({BFCL_PACKAGE}=={BFCL_VERSION}): {exc}") from exc
    wheel = target_dir / BFCL_WHEEL
    if done.returncode != 0 or not wheel.is_file():
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-2:])
        raise BfclDataError(
            f"could not fetch BFCL data ({BFCL_PACKAGE}=={BFCL_VERSION}) with pip download: {tail or 'no wheel'}; "
            f"it needs access to PyPI once, or set {WHEEL_ENV} to a copy of {BFCL_WHEEL}"
        )
    return wheel


def _wheel(target_dir: Path) -> Path:
    """The verified wheel: ``$AISEARCH_BFCL_WHEEL``, the cached copy, or a fresh download.

    Raises:
        BfclDataError: When it cannot be had or its sha256 is not the pinned one.
    """
    given = load_group(EvalSettings, key="evals").bfcl_wheel
    if given:
        wheel = given.expanduser()
        if not wheel.is_file():
            raise BfclDataError(f"{WHEEL_ENV}={given}: no such file")
    else:
        wheel = target_dir / BFCL_WHEEL
        if not wheel.is_file():
            wheel = _download(target_dir)
    digest = sha256_of(wheel)
    if digest != BFCL_SHA256:
        if not given:
            wheel.unlink(missing_ok=True)  # the next run fetches it again
        raise BfclDataError(
            f"{wheel} has sha256 {digest}, expected {BFCL_SHA256} ({BFCL_PACKAGE}=={BFCL_VERSION})"
        )
    return wheel


def _unpack(wheel: Path, root: Path) -> None:
    """Unpack the data files and the checker's modules of ``wheel`` into ``root`` (atomically)."""
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.startswith(KEEP_PREFIXES) and not n.endswith("/")]
        for name in names:
            target = partial / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(name))
    (partial / STAMP).write_text(f"{BFCL_PACKAGE}=={BFCL_VERSION} {BFCL_SHA256}\n", encoding="utf-8")
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    log.info("unpacked %d BFCL files into %s", len(names), root)


def ensure_bfcl() -> Path:
    """The folder that holds ``bfcl_eval/`` (data and checker), fetching and unpacking it once.

    Raises:
        BfclDataError: When the wheel cannot be fetched, is not the pinned one, or cannot be unpacked.
    """
    base = bfcl_dir()
    root = base / BFCL_VERSION
    if (root / STAMP).is_file():
        return root
    try:
        base.mkdir(parents=True, exist_ok=True)
        with FileLock(str(base / "fetch.lock")):
            if not (root / STAMP).is_file():
                _unpack(_wheel(base), root)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BfclDataError(f"could not unpack BFCL data into {root}: {exc}") from exc
    return root


def data_dir(root: Path) -> Path:
    """Where the question files (``BFCL_v4_<category>.json``) are under an unpacked root."""
    return root / "bfcl_eval" / "data"
