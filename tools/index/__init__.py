"""Local document index: ingest files into passages, embed them, and rank them (BM25, dense, hybrid).

Importing this package is cheap: chromadb, torch and sentence-transformers load only when an
index is opened or a text is embedded. The main entry points:

* :func:`tools.index.ingest.index_paths` / :func:`tools.index.ingest.index_sources`: (re)index.
* :class:`tools.index.search.Searcher`: rank passages of one collection.
* :class:`tools.index.store.IndexStore`: the on-disk index (chromadb + BM25 + manifests).
"""

from tools.index.paths import DEFAULT_COLLECTION, INDEX_DIR_ENV, default_index_dir, validate_collection_name

__all__ = ["DEFAULT_COLLECTION", "INDEX_DIR_ENV", "default_index_dir", "validate_collection_name"]
