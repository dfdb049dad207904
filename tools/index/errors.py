"""Errors of the document index that a user (or a calling agent) can act on."""

from __future__ import annotations


class IndexUserError(ValueError):
    """A problem the user can fix: a bad name, an unknown or empty collection, an unknown id."""


class UnknownCollectionError(IndexUserError):
    """The collection does not exist in the index directory."""


class EmptyIndexError(IndexUserError):
    """The collection exists (or is the default one) but holds no passages yet."""


class IndexBuildingError(IndexUserError):
    """The collection is being built right now; try again shortly."""


class UnknownPassageError(IndexUserError):
    """No passage has this id in the collection."""
