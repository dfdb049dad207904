"""Where the tool index and the synthetic-query cache live."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from tools.settings import index_settings


def default_tools_dir() -> Path:
    """``$AISEARCH_TOOLS_DIR``, else ``$XDG_DATA_HOME/aisearch/tools`` (``~/.local/share`` by default)."""
    explicit = index_settings().tools_dir
    if explicit:
        return explicit.expanduser()
    data_home = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return Path(data_home).expanduser() / "aisearch" / "tools"


def synthetic_dir(root: Path | None = None) -> Path:
    """The synthetic-query cache: one JSON file per server description hash."""
    return (root or default_tools_dir()) / "synthetic"


def index_dir(root: Path | None = None) -> Path:
    """The chromadb index of the catalogue (an :class:`tools.index.store.IndexStore` root)."""
    return (root or default_tools_dir()) / "index"


def collection_name(catalogs: Iterable[str | Path] = (), bundled: bool = True) -> str:
    """The index collection of a set of catalogue sources: ``catalog`` for the bundled servers and
    ``mcp.json`` alone, ``catalog-<hash>`` when catalogue files (or no bundled servers) are in it."""
    files = sorted(str(Path(p).expanduser().resolve()) for p in catalogs)
    if not files and bundled:
        return "catalog"
    key = json.dumps([files, not bundled])
    return "catalog-" + hashlib.sha1(key.encode()).hexdigest()[:10]
