"""The question a user asks, made safe to run: cleaned, never empty, bounded in length.

Every entry point (the CLI, the graph's first node, the evaluation runner) reads a query through
:func:`prepare_query`: control characters and unencodable code points are removed, an empty query
is refused with a specific message, and a huge one (a pasted file, a 1 MB string) is trimmed at a
word boundary to :data:`MAX_QUERY_CHARS`, saying so, instead of being sent to a model whose
context it cannot fit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_QUERY_CHARS = 2000
"""About 500 tokens: room for the sources in the 4,096-token context of the local models."""
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class QueryError(ValueError):
    """A query that cannot be run (it is empty once cleaned)."""


@dataclass(frozen=True)
class Query:
    """A cleaned query, and its length before trimming when it was too long."""

    text: str
    trimmed_from: int | None = None

    @property
    def trim_note(self) -> str | None:
        """What was left out, in words, when the query was trimmed."""
        if self.trimmed_from is None:
            return None
        return (
            f"the query past its first {len(self.text):,} characters "
            f"(it had {self.trimmed_from:,}; the rest was not read)"
        )


def prepare_query(raw: str, limit: int = MAX_QUERY_CHARS) -> Query:
    """The query as it will be run.

    Raises:
        QueryError: The query is empty or only whitespace and control characters.
    """
    text = CONTROL.sub("", raw.encode("utf-8", "replace").decode("utf-8")).strip()
    if not text:
        raise QueryError("the query is empty: ask a question in words")
    if len(text) <= limit:
        return Query(text)
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.8:
        cut = cut[:space]
    return Query(cut.rstrip(), trimmed_from=len(text))
