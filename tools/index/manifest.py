"""The manifest of a collection: source key -> content digest and passage ids (incremental indexing)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tools.index.jsonfiles import read_json, write_json


@dataclass
class SourceEntry:
    """What the manifest knows about one source: its digest and its passages.

    ``passages`` lists ``(passage_id, content_hash, stored)`` for every chunk of the source;
    ``stored`` is false for a chunk that duplicates a passage stored for another source.
    """

    digest: str
    passages: list[tuple[str, str, bool]] = field(default_factory=list)

    def stored_ids(self) -> list[str]:
        """Ids of the passages this source owns in the collection."""
        return [pid for pid, _, stored in self.passages if stored]


class Manifest:
    """Source → digest and passage ids, for incremental indexing."""

    def __init__(self, sources: dict[str, SourceEntry] | None = None) -> None:
        """Wrap a mapping of source key to entry."""
        self.sources: dict[str, SourceEntry] = sources or {}

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read a manifest file (an empty manifest if there is none)."""
        raw = read_json(path, {"sources": {}})
        return cls(
            {
                key: SourceEntry(entry["digest"], [(p[0], p[1], bool(p[2])) for p in entry["passages"]])
                for key, entry in raw.get("sources", {}).items()
            }
        )

    def save(self, path: Path) -> None:
        """Write the manifest atomically."""
        data = {
            "version": 1,
            "sources": {
                key: {"digest": entry.digest, "passages": [[p, h, int(s)] for p, h, s in entry.passages]}
                for key, entry in sorted(self.sources.items())
            },
        }
        write_json(path, data)

    def owner_of_hash(self) -> dict[str, str]:
        """Content hash → the source key that stores that passage."""
        return {h: key for key, entry in self.sources.items() for _, h, stored in entry.passages if stored}

    def stored_count(self) -> int:
        """Number of passages stored in the collection."""
        return sum(len(entry.stored_ids()) for entry in self.sources.values())
