"""Which chromadb an index uses: the embedded one in its directory, or a chroma server.

``AISEARCH_CHROMA_URL`` (``http://host:8000``; ``https://`` for TLS) puts the passages and their
vectors in a chroma server (``chroma run --path DIR --host … --port …``) through
``chromadb.HttpClient``, so several processes or machines share one copy. The collection's own
files (state, manifest, BM25 tokens, the exact-search vectors) stay in the index directory
(``tools/index/store.py``), which every process that reads or writes the index must share.
Unset, the index keeps an embedded ``PersistentClient`` under ``<index>/chroma``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from models.env_settings import env_names
from tools.index.errors import IndexUserError
from tools.settings import IndexSettings, index_settings

CHROMA_URL_ENV = env_names(IndexSettings, "chroma_url")[0]
DEFAULT_CHROMA_PORT = 8000


def chroma_url() -> str | None:
    """The chroma server the index uses (``$AISEARCH_CHROMA_URL``), or None for the embedded one."""
    return index_settings().chroma_url


def server_address(url: str) -> tuple[str, int, bool]:
    """``(host, port, ssl)`` of a chroma server URL.

    Raises:
        IndexUserError: Not an ``http(s)://host[:port]`` URL.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/"):
        raise IndexUserError(
            f"{CHROMA_URL_ENV}={url!r} is not a chroma server URL: use http://host:port (or https://)"
        )
    ssl = parts.scheme == "https"
    return parts.hostname, parts.port or (443 if ssl else DEFAULT_CHROMA_PORT), ssl


def open_client(root: Path) -> Any:
    """The chromadb client of the index at ``root``: an ``HttpClient`` when a chroma server is
    configured, else a ``PersistentClient`` under ``root/chroma`` (telemetry off either way)."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    url = chroma_url()
    if url:
        host, port, ssl = server_address(url)
        return chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
    (root / "chroma").mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(root / "chroma"), settings=settings)
