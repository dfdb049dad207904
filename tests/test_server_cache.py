"""The llama.cpp RAM prompt cache is bounded by the bytes its states really hold (issue 11)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

from llama_cpp.llama import LlamaState  # noqa: E402

from models.server_cache import BoundedRAMCache, state_bytes  # noqa: E402

VOCAB = 151_936


def a_state(tokens: int, kv_bytes: int = 1_000_000) -> LlamaState:
    """A saved state as llama-cpp-python makes one: scores are n_batch x n_vocab float32."""
    return LlamaState(
        input_ids=np.arange(4096, dtype=np.intc),
        scores=np.zeros((512, VOCAB), dtype=np.single),
        n_tokens=tokens,
        llama_state=b"\0" * kv_bytes,
        llama_state_size=kv_bytes,
        seed=0,
    )


def test_states_are_stored_compactly_and_counted_in_full() -> None:
    cache = BoundedRAMCache(capacity_bytes=10_000_000)
    state = a_state(100)
    cache[list(range(100))] = state
    stored = cache[list(range(100))]
    assert stored.scores.shape == (1, VOCAB), "the 311 MB scores copy is not kept"
    assert cache.cache_size == state_bytes(stored) == 1_000_000 + 4096 * 4 + VOCAB * 4


def test_capacity_bounds_the_real_bytes_with_oldest_states_evicted() -> None:
    cache = BoundedRAMCache(capacity_bytes=5_000_000)
    for start in range(10):
        cache[[start, 1, 2, 3]] = a_state(4)
    assert cache.cache_size <= 5_000_000
    assert len(cache.cache_state) == 3
    assert (9, 1, 2, 3) in cache.cache_state and (0, 1, 2, 3) not in cache.cache_state


def test_a_compact_state_loads_back_into_the_live_scores_array() -> None:
    live = np.ones((512, VOCAB), dtype=np.single)
    compact = BoundedRAMCache()
    compact[[1, 2]] = a_state(2)
    state = compact[[1, 2]]
    live[: state.n_tokens, :] = state.scores.copy()  # what Llama.load_state does
    assert not live[:2].any()
