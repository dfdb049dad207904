"""The texts the tool index embeds: every server and tool as several records in one space.

Each record carries its owner server (Tool-to-Agent) and its kind:

* ``server``: ``"<server>: <description>"``;
* ``tool``: ``"<server> | <tool>: <description>"`` (the tool hit lifts to its server);
* ``summary``: the server's description and its tool names in one text (the single-vector ablation);
* ``query``: a synthetic user query for the server (TURA's index augmentation), ``order`` its rank
  in the cached list, so a run can use only the first N.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from tools.catalog.model import Catalog

KINDS = ("server", "tool", "summary", "query")


@dataclass(frozen=True)
class IndexEntry:
    """One embedded text of the catalogue and whom it belongs to."""

    id: str
    kind: str
    server: str
    text: str
    tool: str = ""
    order: int = 0

    def metadata(self) -> dict[str, str | int]:
        """Flat chromadb metadata (``type`` and the owner ``server``, as Tool-to-Agent's records)."""
        return {"type": self.kind, "server": self.server, "tool": self.tool, "order": self.order}

    def as_dict(self) -> dict[str, str | int]:
        """A JSON-ready dict (the index's ``entries.json``)."""
        return asdict(self)


def _entry(kind: str, server: str, text: str, tool: str = "", order: int = 0) -> IndexEntry:
    digest = hashlib.sha1(f"{kind}\x1f{server}\x1f{tool}\x1f{order}\x1f{text}".encode()).hexdigest()[:16]
    return IndexEntry(digest, kind, server, text, tool, order)


def catalog_entries(
    catalog: Catalog, synthetic: Mapping[str, Sequence[str]] | None = None
) -> list[IndexEntry]:
    """Every record of ``catalog``; ``synthetic`` maps a server id to its cached synthetic queries."""
    entries: dict[str, IndexEntry] = {}
    for server in catalog.servers.values():
        names = ", ".join(tool.name for tool in server.tools)
        records = [
            _entry("server", server.id, f"{server.id}: {server.description}".strip()),
            _entry("summary", server.id, f"{server.id}: {server.description} Tools: {names}".strip()),
            *(
                _entry("tool", server.id, f"{server.id} | {tool.name}: {tool.description.strip()}", tool.name)
                for tool in server.tools
            ),
            *(
                _entry("query", server.id, query.strip(), order=order)
                for order, query in enumerate((synthetic or {}).get(server.id, ()))
                if query.strip()
            ),
        ]
        entries.update((record.id, record) for record in records)
    return list(entries.values())


def fingerprint(entries: Sequence[IndexEntry], embedder: str) -> str:
    """A hash of the records and the embedder: the index is rebuilt only when it changes."""
    digest = hashlib.sha256(embedder.encode())
    for entry_id in sorted(e.id for e in entries):
        digest.update(entry_id.encode())
    return digest.hexdigest()[:20]
