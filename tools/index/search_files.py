"""A collection's search files beside chromadb, each tagged with the generation it was built from:
``bm25.json`` (passage ids and their BM25 tokens) and ``vectors.npy`` with ``vectors.json`` (the
embedding matrix for exact search, rows in the order of its ids). A file whose generation is not the
collection's is stale: ``tools/index/store.py`` rebuilds it from chromadb."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.index.embedder import DIMENSIONS
from tools.index.jsonfiles import read_json, write_json


def bm25_path(directory: Path) -> Path:
    """The collection's ``bm25.json``."""
    return directory / "bm25.json"


def save_bm25(directory: Path, ids: Sequence[str], tokens: Sequence[list[str]], generation: int) -> None:
    """Persist the BM25 token lists of every stored passage."""
    write_json(
        bm25_path(directory),
        {"generation": generation, "ids": list(ids), "tokens": [" ".join(t) for t in tokens]},
    )


def load_bm25_tokens(directory: Path) -> tuple[int, list[str], list[list[str]]] | None:
    """``(generation, ids, tokens)`` from ``bm25.json``, or ``None`` when missing."""
    raw = read_json(bm25_path(directory), None)
    if not raw:
        return None
    return raw["generation"], raw["ids"], [t.split() for t in raw["tokens"]]


def save_vectors(directory: Path, ids: Sequence[str], matrix: Any, generation: int) -> None:
    """Persist the embedding matrix (rows in the order of ``ids``) for exact search."""
    import numpy as np

    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".vectors.{os.getpid()}.{threading.get_ident()}.npy"
    np.save(tmp, np.asarray(matrix, dtype=np.float32).reshape(len(ids), DIMENSIONS))
    tmp.replace(directory / "vectors.npy")
    write_json(directory / "vectors.json", {"generation": generation, "ids": list(ids)})


def load_vectors(directory: Path) -> tuple[int, list[str], Any] | None:
    """``(generation, ids, matrix)`` from ``vectors.npy``/``vectors.json``, or ``None``."""
    import numpy as np

    meta = read_json(directory / "vectors.json", None)
    if not meta or not (directory / "vectors.npy").exists():
        return None
    matrix = np.load(directory / "vectors.npy")
    if matrix.shape[0] != len(meta["ids"]):
        return None
    return meta["generation"], meta["ids"], matrix
