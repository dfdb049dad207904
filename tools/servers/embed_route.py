"""The document server's plain HTTP routes beside MCP: ``GET /health`` and ``POST /embed``.

``/embed`` serves the server's MiniLM to other processes (``tools/index/remote_embedder.py``), so
the CLI's route classifier never loads torch. Embeddings of texts seen before come from an LRU
cache: the classifier's 126 example queries are embedded once per server, not once per question.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import JSONResponse

from tools.index.remote_embedder import EMBED_PATH, MAX_TEXTS, pack

if TYPE_CHECKING:
    import numpy as np

    from tools.index.embedder import Embedder

MAX_TEXT_CHARS = 4000
CACHE_SIZE = 4096


class CachedEmbedder:
    """An embedder with an LRU cache of the vectors of texts it has embedded."""

    def __init__(self, embedder: Embedder, size: int = CACHE_SIZE) -> None:
        """Cache up to ``size`` vectors of ``embedder``'s."""
        self.embedder = embedder
        self.size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (cached rows reused, the others embedded in one call)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.embedder.dimensions), dtype=np.float32)
        with self._lock:
            found = {text: self._cache[text] for text in texts if text in self._cache}
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            found.update(zip(missing, self.embedder.encode(missing, threads=1), strict=True))
        with self._lock:
            for text in dict.fromkeys(texts):
                self._cache[text] = found[text]
                self._cache.move_to_end(text)
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return np.stack([found[text] for text in texts])


def _texts(body: Any) -> list[str]:
    texts = body.get("texts") if isinstance(body, dict) else None
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        raise ValueError('expected {"texts": ["...", ...]}')
    if len(texts) > MAX_TEXTS:
        raise ValueError(f"at most {MAX_TEXTS} texts per request")
    return [text[:MAX_TEXT_CHARS] for text in texts]


def add_routes(mcp: FastMCP, embedder: Embedder) -> CachedEmbedder:
    """Add ``GET /health`` (the server's pid) and ``POST /embed`` (MiniLM vectors) to ``mcp``'s HTTP app."""
    cached = CachedEmbedder(embedder)

    # FastMCP's custom_route is unannotated
    @mcp.custom_route("/health", methods=["GET"])  # type: ignore[untyped-decorator]
    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "pid": os.getpid()})

    @mcp.custom_route(EMBED_PATH, methods=["POST"])  # type: ignore[untyped-decorator]
    async def embed(request: Request) -> JSONResponse:
        try:
            texts = _texts(await request.json())
        except ValueError as exc:  # also a body that is not JSON
            return JSONResponse({"error": str(exc)}, status_code=400)
        vectors = await anyio.to_thread.run_sync(cached.encode, texts)
        return JSONResponse({"dimensions": int(vectors.shape[1]), "vectors": pack(vectors)})

    return cached
