"""Sources: anything that yields documents and has a content digest (a file, a pydoc page)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tools.index.documents import Document
from tools.index.loaders import discover, load_file

LOADER_VERSION = "2"  # bump when parsing or chunking changes, so every source is re-indexed


@dataclass
class Source:
    """A unit of incremental indexing: ``key`` (a resolved path or a pseudo path), a digest of its
    content, and a loader that produces its documents."""

    key: str
    digest: str
    load: Callable[[], list[Document]]


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes (plus the loader version)."""
    digest = hashlib.sha256(LOADER_VERSION.encode())
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def file_source(path: Path) -> Source:
    """A :class:`Source` for one file."""
    return Source(key=str(path), digest=file_digest(path), load=lambda: load_file(path))


def file_sources(paths: Iterable[str | Path]) -> tuple[list[Source], list[Path]]:
    """Sources for every supported file under ``paths``, and the resolved roots.

    Raises:
        FileNotFoundError: When a path does not exist.
    """
    paths = list(paths)
    roots = [Path(p).expanduser().resolve() for p in paths]
    return [file_source(path) for path in discover(paths)], roots


def under_roots(roots: Iterable[Path]) -> Callable[[str], bool]:
    """A scope test for removals: a manifest key leaves the index when it is under one of
    ``roots`` (and was not found again) or when it is a file path that no longer exists."""
    prefixes = [str(root) for root in roots]

    def in_scope(key: str) -> bool:
        if any(key == p or key.startswith(p.rstrip(os.sep) + os.sep) for p in prefixes):
            return True
        return key.startswith(os.sep) and not os.path.exists(key)

    return in_scope
