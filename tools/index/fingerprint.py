"""The document index's fingerprint: one hash that changes whenever what it holds changes.

Each collection's manifest (``collections/<name>/manifest.json``) lists its sources with their
content digests and passage ids, and indexing rewrites it whenever a source is added, changed or
removed. The fingerprint hashes every collection's name with its manifest's bytes, so adding,
re-indexing or dropping a collection changes it, and indexing the same files again (nothing
changed) does not. Manifests are re-read only when their size or modification time changes.

The caches key their entries by it (``tools/cache/``): an answer or a search result recorded over
one version of the documents is never served over another.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from tools.index.paths import default_index_dir

_DIGESTS: dict[Path, tuple[tuple[int, int], str]] = {}  # manifest -> ((mtime_ns, size), sha256)
_LOCK = threading.Lock()


def _manifest_digest(path: Path) -> str:
    """The sha256 of one manifest (cached while its size and modification time stay the same)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return "none"
    key = (stat.st_mtime_ns, stat.st_size)
    with _LOCK:
        cached = _DIGESTS.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with _LOCK:
        _DIGESTS[path] = (key, digest)
    return digest


def corpus_fingerprint(root: Path | None = None) -> str:
    """A short hash of every collection under the index directory ``root`` (default: the user's,
    ``$AISEARCH_INDEX_DIR``); ``"empty"`` when there is no collection."""
    base = (root or default_index_dir()) / "collections"
    names = sorted(path.name for path in base.iterdir() if path.is_dir()) if base.is_dir() else []
    if not names:
        return "empty"
    digest = hashlib.sha256()
    for name in names:
        digest.update(f"{name}\0{_manifest_digest(base / name / 'manifest.json')}\n".encode())
    return digest.hexdigest()[:16]
