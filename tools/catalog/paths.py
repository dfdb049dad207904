"""Where the tool index and the synthetic-query cache live."""

from __future__ import annotations

import os
from pathlib import Path

TOOLS_DIR_ENV = "AISEARCH_TOOLS_DIR"


def default_tools_dir() -> Path:
    """``$AISEARCH_TOOLS_DIR``, else ``$XDG_DATA_HOME/aisearch/tools`` (``~/.local/share`` by default)."""
    explicit = os.environ.get(TOOLS_DIR_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return Path(data_home).expanduser() / "aisearch" / "tools"


def synthetic_dir(root: Path | None = None) -> Path:
    """The synthetic-query cache: one JSON file per server description hash."""
    return (root or default_tools_dir()) / "synthetic"


def index_dir(root: Path | None = None) -> Path:
    """The chromadb index of the catalogue (an :class:`tools.index.store.IndexStore` root)."""
    return (root or default_tools_dir()) / "index"
