"""Embeddings from the long-lived document server, behind the same interface as :class:`Embedder`.

The document server (``tools/docs_server.py``) keeps MiniLM loaded; ``POST /embed`` with
``{"texts": [...]}`` answers ``{"dimensions": 384, "vectors": "<base64 float32, row-major>"}``.
A process that only needs a few embeddings (the Master's route classifier in the CLI) asks it
instead of loading torch and the model itself (about 4 s on a small machine). When the server
cannot be reached the client logs it once and loads the model in-process from then on.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import httpx

from tools.docs_server import enabled_by_env, running_state
from tools.index.embedder import DIMENSIONS, MODEL_NAME, Embedder, TextEmbedder, shared_embedder

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

EMBED_PATH = "/embed"
MAX_TEXTS = 1024  # per request


def pack(vectors: np.ndarray) -> str:
    """A float32 matrix as base64 of its row-major bytes (exact, a third of the size of JSON numbers)."""
    import numpy as np

    return base64.b64encode(np.ascontiguousarray(vectors, dtype="<f4").tobytes()).decode("ascii")


def unpack(data: str, rows: int, dimensions: int = DIMENSIONS) -> np.ndarray:
    """The matrix :func:`pack` wrote, shape ``(rows, dimensions)``.

    Raises:
        ValueError: When the data does not hold that many float32 values.
    """
    import numpy as np

    vectors = np.frombuffer(base64.b64decode(data), dtype="<f4").astype(np.float32)
    if vectors.size != rows * dimensions:
        raise ValueError(f"expected {rows} x {dimensions} floats, got {vectors.size}")
    return vectors.reshape(rows, dimensions)


class RemoteEmbedder:
    """MiniLM embeddings computed by the document server at ``base_url`` (falls back to in-process)."""

    name = MODEL_NAME
    dimensions = DIMENSIONS

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 60.0,
        fallback: Callable[[], Embedder] = shared_embedder,
    ) -> None:
        """Ask the server at ``base_url``; ``fallback`` gives the in-process embedder when it fails."""
        self.url = base_url.rstrip("/") + EMBED_PATH
        self.timeout_s = timeout_s
        self._fallback = fallback
        self._local: Embedder | None = None

    def encode(
        self,
        texts: Sequence[str],
        *,
        threads: int | None = None,
        on_batch: Callable[[int], object] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` into a float32 matrix of normalised rows (``threads`` only matters in-process)."""
        if self._local is None:
            try:
                return self._remote(list(texts), on_batch)
            except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                log.warning(
                    "the document server's embedder at %s failed (%s); loading %s in this process",
                    self.url,
                    exc,
                    MODEL_NAME,
                )
                self._local = self._fallback()
        return self._local.encode(texts, threads=threads, on_batch=on_batch)

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query."""
        vector: np.ndarray = self.encode([text])[0]
        return vector

    def _remote(self, texts: list[str], on_batch: Callable[[int], object] | None) -> np.ndarray:
        import numpy as np

        parts = []
        with httpx.Client(timeout=self.timeout_s) as client:
            for start in range(0, len(texts), MAX_TEXTS):
                chunk = texts[start : start + MAX_TEXTS]
                response = client.post(self.url, json={"texts": chunk})
                response.raise_for_status()
                body = response.json()
                parts.append(unpack(body["vectors"], len(chunk), int(body["dimensions"])))
                if on_batch:
                    on_batch(len(chunk))
        return np.concatenate(parts) if parts else np.zeros((0, self.dimensions), dtype=np.float32)


def routing_embedder() -> TextEmbedder:
    """The embedder of a process that needs only a few embeddings (the Master's route classifier).

    The running document server's (``tools/docs_server.py``) when there is one for this index and
    ``$AISEARCH_DOCS_SERVER`` does not turn it off; else MiniLM loaded in this process (logged).
    """
    state = running_state() if enabled_by_env() else None
    if state is None:
        log.info("no document server is running: loading %s in this process", MODEL_NAME)
        return shared_embedder()
    log.info("embeddings from the document server at %s (pid %s)", state["url"], state["pid"])
    return RemoteEmbedder(state["url"])
