"""The Planner's and Executor's candidate tools: catalogue retrieval over the run's servers
(the "dynamic capability boundary" of seed 001 §3.3, retrieved as TURA §4.1 and Tool-to-Agent do).

The run's catalogue is its hub's view (every server it may start, described or listed); its index
is :class:`tools.catalog.run_index.RunIndex`; the query is decomposed into intents by the rules
(no model call), each intent scores every record (MaxSim per server plus BM25), tools lift to
their servers and a server keeps its best intent (``tools/catalog/retrieve.py``).

The candidate list takes the best tool of each of the top servers first (breadth: one per intent
the query implies), then the other tools of those servers by score, up to ``k``. A candidate that
needs an identifier another tool produces (``tools/needs.py``) says so in its description, and
its producer is put before it (added when retrieval missed it).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tools.catalog.model import Catalog
from tools.catalog.retrieve import RetrievalOptions, ToolRetriever
from tools.catalog.run_catalog import hub_catalog
from tools.needs import needs_text, tool_needs

if TYPE_CHECKING:
    from tools.catalog.run_index import RunIndex
    from tools.hub import CandidateTool, ToolHub, ToolSpec

log = logging.getLogger(__name__)


@dataclass
class Selection:
    """The candidates (prompt-ready dicts) and how they were found."""

    candidates: list[CandidateTool]
    intents: list[str] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)
    dense: bool = True
    ms: float = 0.0


def candidate(spec: ToolSpec, peers: list[ToolSpec], score: float | None, intent: str = "") -> CandidateTool:
    """One candidate as the state keeps it: the tool's brief, its score, the intent it matched, and
    the identifiers it needs from other tools (also said in its description)."""
    brief = spec.brief()
    record: CandidateTool = {
        "name": brief["name"],
        "description": brief["description"],
        "args": brief["args"],
        "server": spec.server,
        "score": None if score is None else round(score, 3),
    }
    optional = spec.optional_args()
    if optional:
        record["optional"] = optional
    needs = tool_needs(spec, peers)
    if needs:
        record["needs"] = needs
        record["description"] = f"{record['description']} ({needs_text(needs)})"
    if intent:
        record["intent"] = intent
    return record


def with_producers(names: list[str], specs: dict[str, ToolSpec]) -> list[str]:
    """``names`` with every needed producer placed before its first consumer (added if missing)."""
    peers = list(specs.values())
    ordered: list[str] = []
    for name in names:
        for producer in tool_needs(specs[name], peers).values():
            if producer not in ordered:
                ordered.append(producer)
        if name not in ordered:
            ordered.append(name)
    return ordered


class ToolCandidates:
    """Retrieves a run's candidate tools from its catalogue."""

    def __init__(self, hub: ToolHub, index: RunIndex, options: RetrievalOptions | None = None) -> None:
        """Retrieve over ``hub``'s tools with ``index``; ``options`` default to rule decomposition."""
        self.hub = hub
        self.index = index
        self.options = options or RetrievalOptions(decompose="rules")
        self._retrievers: dict[str, ToolRetriever] = {}

    def retriever(self, catalog: Catalog | None = None) -> tuple[ToolRetriever, bool]:
        """The retriever over ``catalog`` (default: the hub's now), rebuilt only when it changed, and
        whether it is dense."""
        built = self.index.build(catalog if catalog is not None else hub_catalog(self.hub))
        fp = built.index.fingerprint
        if fp not in self._retrievers:
            self._retrievers = {fp: ToolRetriever(built.index)}
        return self._retrievers[fp], built.dense

    async def aselect(self, query: str, k: int) -> Selection:
        """:meth:`select` off the event loop (embedding a query may take a while), on a snapshot of
        the hub's tools taken on it (a server starting meanwhile changes them)."""
        specs, catalog = dict(self.hub.specs), hub_catalog(self.hub)
        return await asyncio.to_thread(self.select, query, k, specs=specs, catalog=catalog)

    def select(
        self,
        query: str,
        k: int,
        *,
        specs: dict[str, ToolSpec] | None = None,
        catalog: Catalog | None = None,
    ) -> Selection:
        """Up to ``k`` candidate tools for ``query`` (more only to add a needed producer).

        ``specs`` and ``catalog`` are the hub's tools and catalogue (default: the hub's now).
        """
        specs = dict(self.hub.specs) if specs is None else specs
        if not specs:
            return Selection([])
        retriever, dense = self.retriever(catalog)
        servers_k = max(1, (k + 1) // 2)
        options = RetrievalOptions(
            **{**self.options.__dict__, "k": servers_k, "tools_per_server": k, "dense": dense}
        )
        found = retriever.search(query, options)
        hits = {f"{t.server}.{t.tool}": t for server in found.servers for t in server.tools}
        first = [f"{s.server}.{s.tools[0].tool}" for s in found.servers if s.tools]
        rest = sorted((n for n in hits if n not in first), key=lambda n: -hits[n].score)
        names = [n for n in dict.fromkeys([*first, *rest]) if n in specs][:k]
        names = with_producers(names, specs)
        peers = list(specs.values())
        candidates = [
            candidate(
                specs[n], peers, hits[n].score if n in hits else None, hits[n].intent if n in hits else ""
            )
            for n in names
        ]
        log.info(
            "candidates for %r in %.1f ms (%s): %s",
            query[:80],
            found.ms,
            "dense+bm25" if dense else "bm25 only",
            ", ".join(names),
        )
        return Selection(candidates, found.intents, [s.server for s in found.servers], dense, found.ms)
