"""Where the index lives and what a collection may be called."""

from __future__ import annotations

import os
import re
from pathlib import Path

from models.env_settings import env_names
from tools.index.errors import IndexUserError
from tools.settings import DEFAULT_COLLECTION as DEFAULT_COLLECTION
from tools.settings import IndexSettings, index_settings

INDEX_DIR_ENV = env_names(IndexSettings, "dir")[0]
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,62}[A-Za-z0-9]$")


def default_index_dir() -> Path:
    """The index directory: ``$AISEARCH_INDEX_DIR``, else ``$XDG_DATA_HOME/aisearch/index``.

    ``$XDG_DATA_HOME`` defaults to ``~/.local/share``.
    """
    explicit = index_settings().dir
    if explicit:
        return explicit.expanduser()
    data_home = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return Path(data_home).expanduser() / "aisearch" / "index"


def validate_collection_name(name: object) -> str:
    """Return ``name`` if it is a valid collection name, else raise :class:`IndexUserError`.

    Names have 3–64 characters from letters, digits, ``.``, ``_`` and ``-``, and start and end
    with a letter or digit (chromadb's rule, kept for every collection).
    """
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise IndexUserError(
            f"invalid collection name {name!r}: use 3-64 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit (for example 'docs' or 'my-notes')"
        )
    return name
