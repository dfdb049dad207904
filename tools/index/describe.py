"""Plain-words descriptions of what each collection holds, for tool descriptions and prompts.

The Master and the tool retriever only know what a search tool can answer from its description,
so the ``docsearch`` server names its collections and their content there ("docs: the Python
standard library documentation, 1676 passages"), read from each collection's manifest.
"""

from __future__ import annotations

import os
from pathlib import Path

from tools.index.stdlib_corpus import in_default_scope
from tools.index.store import IndexStore

STDLIB = "the Python standard library documentation"


def describe_sources(keys: list[str]) -> str:
    """What a set of manifest source keys is: the stdlib docs, files under a folder, or both."""
    parts = []
    if any(in_default_scope(key) for key in keys):
        parts.append(STDLIB)
    files = [key for key in keys if not in_default_scope(key)]
    if len(files) == 1:
        parts.append(f"the file {Path(files[0]).name}")
    elif files:
        try:
            common = Path(os.path.commonpath(files))
        except ValueError:  # paths on different drives, or mixed absolute and relative
            common = None
        parts.append(f"{len(files)} files under {common.name or common}" if common else f"{len(files)} files")
    return " and ".join(parts) or "no documents yet"


def describe_collections(store: IndexStore) -> list[str]:
    """One line per collection: ``name: what it holds, n passages``."""
    lines = []
    for name in store.names():
        collection = store.collection(name)
        passages = int(collection.state().get("passages", 0))
        keys = list(collection.manifest().sources)
        lines.append(f"{name}: {describe_sources(keys)}, {passages} passages")
    return lines
