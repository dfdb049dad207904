"""A hand-made catalogue and a bag-of-words embedder with known cosines, for the tool-index tests."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DIMENSIONS = 384

CATALOG: list[dict[str, Any]] = [
    {
        "name": "Weather",
        "description": "weather forecast rain",
        "category": "Discovery",
        "config": {"mcpServers": {"weather": {"command": "weather-mcp"}}},
        "tools": {"weather": {"tools": [{"name": "get_forecast", "description": "forecast rain wind"}]}},
    },
    {
        "name": "Trains",
        "description": "railway tickets",
        "category": "Travel",
        "config": {"mcpServers": {"trains": {"command": "trains-mcp"}}},
        "tools": {
            "trains": {
                "tools": [
                    {"name": "get_tickets", "description": "train tickets seats"},
                    {"name": "get_stations", "description": "station codes"},
                ]
            }
        },
    },
    {
        "name": "Files",
        "description": "local disk",
        "category": "File Access",
        "config": {"mcpServers": {"files": {"command": "files-mcp"}}},
        "tools": {"files": {"tools": [{"name": "write_file", "description": "write file"}]}},
    },
    {
        "name": "Editor",
        "description": "text editing",
        "category": "File Access",
        "config": {"mcpServers": {"editor": {"command": "editor-mcp"}}},
        "tools": {"editor": {"tools": [{"name": "write_file", "description": "write file text"}]}},
    },
]


def write_catalog(path: Path, entries: list[dict[str, Any]] | None = None) -> Path:
    """Write the catalogue (LiveMCPBench format) to ``path``."""
    path.write_text(json.dumps(CATALOG if entries is None else entries), encoding="utf-8")
    return path


class BagOfWordsEmbedder:
    """Each lower-case word is its own axis (by CRC32): cosine = word overlap, known by hand."""

    name = "bag-of-words-test"
    dimensions = DIMENSIONS

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def vector(self, text: str) -> np.ndarray:
        """The unit vector of ``text``'s words."""
        row = np.zeros(DIMENSIONS, dtype=np.float32)
        for word in re.findall(r"[a-z]+", text.lower()):
            row[zlib.crc32(word.encode()) % DIMENSIONS] += 1.0
        norm = float(np.linalg.norm(row))
        return row / norm if norm else row

    def encode(
        self,
        texts: Sequence[str],
        *,
        threads: int | None = None,
        on_batch: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` (recorded in :attr:`encoded`)."""
        self.encoded.extend(texts)
        if on_batch and texts:
            on_batch(len(texts))
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, DIMENSIONS), np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query."""
        return self.vector(text)
