"""The first-run build of the default collection: the Python standard library documentation is
indexed once, so that a fresh machine (no user documents yet) can answer questions about it.

``aisearch ask`` calls :func:`ensure_default_collection` before it starts the MCP servers; the
``docsearch`` server uses :func:`default_build_enabled` for its own background build. Both obey
``AISEARCH_DOCSEARCH_DEFAULT_BUILD`` (on unless ``0``/``false``/``no``/``off``).
"""

from __future__ import annotations

from models.env_settings import env_names
from tools.index.ingest import IngestReport, Progress
from tools.index.paths import DEFAULT_COLLECTION
from tools.index.service import build_default_collection, default_build_needed
from tools.index.store import IndexStore
from tools.settings import IndexSettings, index_settings

DEFAULT_BUILD_ENV = env_names(IndexSettings, "default_build")[0]


def default_build_enabled() -> bool:
    """Whether the default collection may be built when missing (``$AISEARCH_DOCSEARCH_DEFAULT_BUILD``)."""
    return index_settings().default_build


def ensure_default_collection(
    store: IndexStore, *, on_progress: Progress | None = None
) -> IngestReport | None:
    """Build the default collection if it is missing or was left half-built by a dead process.

    Safe when several processes call it at once: a collection being written by a live process
    counts as present (that process finishes it), and the build itself holds the collection's
    writer lock, so a process that lost the race waits for the winner and then finds nothing to do.

    Args:
        store: The index directory.
        on_progress: Called with ``(passages embedded, passages to embed)`` while embedding; an
            exception it raises aborts the build, which the next call then resumes.

    Returns:
        What the build did, or ``None`` when the collection was already there (no work done).
    """
    if not default_build_needed(store, DEFAULT_COLLECTION):
        return None
    report = build_default_collection(store, DEFAULT_COLLECTION, on_progress=on_progress)
    if not (report.changed or report.removed or report.passages_added or report.passages_removed):
        return None  # another process built it while this one waited for the writer lock
    return report
