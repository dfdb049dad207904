"""A RAM prompt cache for the llama.cpp server whose size limit bounds its real memory.

llama-cpp-python's ``LlamaRAMCache`` counts only the KV bytes of each saved state against its
capacity, but every ``LlamaState`` also carries a copy of the model's ``scores`` array:
``n_batch × n_vocab`` float32, about 311 MB for Qwen2.5's 151,936-token vocabulary, next to a few
tens of MB of KV. A "1 GiB" cache therefore grew past 23 GB and the kernel killed the server.

Without ``logits_all`` (how the embedded server runs) the scores are never read: sampling happens
inside llama.cpp's sampler. So each state is stored with a one-row placeholder instead (NumPy
broadcasting fills the live array from it on load), and the capacity counts every byte a state
holds. This module runs inside the server process (see ``models/server_launcher.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_cpp.llama_cache import LlamaRAMCache

log = logging.getLogger(__name__)


def state_bytes(state: Any) -> int:
    """Every byte a saved llama state holds: KV data, token ids and scores."""
    return int(state.llama_state_size) + int(state.input_ids.nbytes) + int(state.scores.nbytes)


class BoundedRAMCache(LlamaRAMCache):
    """``LlamaRAMCache`` with compact states and a capacity that counts their real size."""

    def __init__(self, capacity_bytes: int = 2 << 30) -> None:
        """Keep at most ``capacity_bytes`` of saved states (least recently used evicted first)."""
        super().__init__(capacity_bytes)
        self._bytes = 0

    @property
    def cache_size(self) -> int:
        """Bytes held by the saved states."""
        return self._bytes

    def __setitem__(self, key: Sequence[int], value: Any) -> None:
        """Store a compact copy of ``value``, then evict the oldest states until within capacity."""
        if value.scores.ndim == 2 and value.scores.shape[0] > 1:
            value.scores = np.zeros((1, value.scores.shape[1]), dtype=value.scores.dtype)
        key = tuple(key)
        if key in self.cache_state:
            self._bytes -= state_bytes(self.cache_state.pop(key))
        self.cache_state[key] = value
        self._bytes += state_bytes(value)
        while self._bytes > self.capacity_bytes and self.cache_state:
            _, evicted = self.cache_state.popitem(last=False)
            self._bytes -= state_bytes(evicted)
        log.debug("prompt cache: %d states, %.1f MB", len(self.cache_state), self._bytes / 1e6)


def install() -> None:
    """Make the llama.cpp server build its RAM prompt caches as :class:`BoundedRAMCache`."""
    import llama_cpp

    # llama_cpp re-exports the class without __all__; the server looks it up on the package
    llama_cpp.LlamaRAMCache = BoundedRAMCache  # type: ignore[attr-defined]
