"""Intent-aware retrieval over the tool index (TURA §4.1 with Tool-to-Agent's lifting).

For each intent of the query (``tools/catalog/decompose.py``) every record of the index is scored
exhaustively (exact search, as the document index does below 100k records; ``tools/index/dense.py``),
so collapsing records to servers always yields ``k`` servers when the catalogue has them, with no
approximate top-N to over-fetch. Per intent, a server's dense score is its best record's cosine
(MaxSim, TURA Eq. 4; equal to Tool-to-Agent Alg. 1's first-occurrence lift of tool hits to their
owner), plus ``bm25_weight`` times its best record's BM25 score divided by the intent's best (the
hybrid; fused at server level, our choice: neither paper fixes one). BM25's statistics (IDF, mean
length) come from the records in use only, so an ablation that leaves a kind out (the synthetic
queries, say) scores as an index built without it would. A server's final score is its
best over the intents (Eq. 5-6), kept with the intent that gave it. Tools are ranked the same way,
each on its own record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.catalog.decompose import IMPLICIT_NEEDS, Mode, decompose
from tools.catalog.index import ToolIndex
from tools.catalog.tokens import tokenize
from tools.index.bm25 import BM25Index

if TYPE_CHECKING:
    from models.factory import ChatFn

DEFAULT_KINDS = frozenset({"server", "tool"})
"""The records that represent a server by default: its description and its tools. TURA's synthetic
queries (``query``) join only when asked (:func:`record_kinds`): written by the local 1.5B they
lowered server Recall@5 on LiveMCPBench dev (``results/tool-retrieval-augmented-2026-11-24.md``)."""
IMPLIED = frozenset(IMPLICIT_NEEDS.values())


def record_kinds(synthetic_queries: bool) -> frozenset[str]:
    """The record kinds to retrieve over: the default ones, plus the synthetic queries when asked."""
    return DEFAULT_KINDS | {"query"} if synthetic_queries else DEFAULT_KINDS


@dataclass(frozen=True)
class RetrievalOptions:
    """How to retrieve (every ablation is one of these switches).

    Attributes:
        k: Servers to return.
        tools_per_server: Top tools returned inside each server.
        kinds: Which records represent a server (``server``, ``tool``, ``query``, ``summary``).
        dense: Score by the embedder (off: BM25 only).
        bm25_weight: Weight of the normalised BM25 score (0: dense only).
        decompose: ``rules``, ``llm`` or ``none``.
        keep_query: Retrieve for the whole query as well as for its parts.
        implicit_needs: Add the rule splitter's intents for implied needs (current date, file access).
        synthetic_limit: Use only the first N synthetic queries of each server (None: all).
        n_tools: Length of the catalogue-wide tool ranking returned with the servers.
        implicit_weight: Scale of the scores of an implied need's intent (the current date, file
            access): those servers join the top K without displacing the query's explicit needs.
        implicit_servers: How many servers an implied need's intent may put forward (its best ones;
            None: all). An implied need is one capability: left open, "get the current date" also
            lifts every server with a date tool (a train-ticket server) over the query's own needs.
    """

    k: int = 5
    tools_per_server: int = 3
    kinds: frozenset[str] = DEFAULT_KINDS
    dense: bool = True
    bm25_weight: float = 0.05
    decompose: Mode = "rules"
    keep_query: bool = True
    implicit_needs: bool = True
    synthetic_limit: int | None = None
    n_tools: int = 10
    implicit_weight: float = 0.9
    implicit_servers: int | None = 1


@dataclass(frozen=True)
class ToolHit:
    """A tool, its best score over the intents and the intent that gave it."""

    server: str
    tool: str
    score: float
    intent: str


@dataclass
class ServerHit:
    """A retrieved server: its score, the intent it matched, the record kind that matched it
    (``server``, ``tool``, ``query``, ``summary``) and its top tools."""

    server: str
    score: float
    intent: str
    via: str
    tools: list[ToolHit] = field(default_factory=list)


@dataclass
class Retrieval:
    """The top-K servers (with their tools), the catalogue-wide tool ranking, the intents and the time
    the retrieval took (decomposition by a model excluded: ``decompose_ms``)."""

    intents: list[str]
    servers: list[ServerHit]
    tools: list[ToolHit]
    ms: float
    decompose_ms: float = 0.0


class ToolRetriever:
    """Retrieval over one loaded :class:`ToolIndex`."""

    def __init__(self, index: ToolIndex) -> None:
        """Prepare the per-record arrays (kind, owner, synthetic-query order)."""
        import numpy as np

        self.index = index
        self.entries = [index.by_id[pid] for pid in index.dense.ids]
        if list(index.bm25.ids) != list(index.dense.ids):
            raise ValueError("the tool index's dense and BM25 records differ")
        self._kind = np.array([e.kind for e in self.entries])
        self._order = np.array([e.order for e in self.entries])
        self._is_tool = self._kind == "tool"
        self.servers = list(dict.fromkeys(e.server for e in self.entries))
        column = {server: i for i, server in enumerate(self.servers)}
        self._owner = np.array([column[e.server] for e in self.entries])
        self._lexical: dict[bytes, BM25Index] = {}

    def _bm25(self, mask: Any) -> BM25Index:
        """BM25 over the records ``mask`` keeps (the index's own when it keeps them all), cached per mask."""
        if mask.all():
            return self.index.bm25
        key = mask.tobytes()
        if key not in self._lexical:
            kept = [entry for entry, used in zip(self.entries, mask, strict=True) if used]
            self._lexical[key] = BM25Index([e.id for e in kept], [tokenize(e.text) for e in kept])
        return self._lexical[key]

    def _mask(self, options: RetrievalOptions) -> Any:
        import numpy as np

        mask = np.isin(self._kind, sorted(options.kinds))
        if options.synthetic_limit is not None:
            mask &= ~((self._kind == "query") & (self._order >= options.synthetic_limit))
        return mask

    def scores(self, intents: list[str], options: RetrievalOptions) -> tuple[Any, Any]:
        """Per intent (rows) and record (columns): the cosine and the BM25 score divided by the
        intent's best (0 to 1); records of unused kinds score ``-inf`` and 0."""
        import numpy as np

        mask = self._mask(options)
        dense = np.zeros((len(intents), len(self.entries)), dtype=np.float64)
        if options.dense:
            vectors = self.index.embedder.encode(intents, threads=1)
            dense = np.stack([self.index.dense.scores(v) for v in vectors]).astype(np.float64)
        lexical = np.zeros_like(dense)
        if (options.bm25_weight > 0 or not options.dense) and mask.any():
            bm25 = self._bm25(mask)
            for row, intent in zip(lexical, intents, strict=True):
                row[mask] = bm25.scores(" ".join(tokenize(intent)))
                best = row.max() if len(row) else 0.0
                if best > 0:
                    row /= best
        dense[:, ~mask] = -np.inf
        return dense, lexical

    def _per_server(self, rows: Any) -> Any:
        """The best record of each server per intent (MaxSim, Eq. 4): intents x servers."""
        import numpy as np

        best = np.full((rows.shape[0], len(self.servers)), -np.inf)
        for i, row in enumerate(rows):
            np.maximum.at(best[i], self._owner, row)
        return best

    def search(
        self, query: str, options: RetrievalOptions | None = None, *, chat: ChatFn | None = None
    ) -> Retrieval:
        """The top-K servers for ``query``, their top tools, and the catalogue-wide tool ranking."""
        import numpy as np

        options = options or RetrievalOptions()
        started = time.perf_counter()
        intents = decompose(
            query,
            options.decompose,
            chat=chat,
            keep_query=options.keep_query,
            implicit=options.implicit_needs,
        )
        decomposed = time.perf_counter()
        dense, lexical = self.scores(intents, options)
        weight = options.bm25_weight if options.dense else 1.0
        dense_part = self._per_server(dense) if options.dense else 0.0
        servers_by_intent = dense_part + weight * self._per_server(lexical)  # intents x servers
        servers_by_intent[~np.isfinite(self._per_server(dense))] = -np.inf  # a server without used records
        implied = [i for i, intent in enumerate(intents) if intent in IMPLIED]
        servers_by_intent[implied] *= options.implicit_weight
        if options.implicit_servers is not None:  # an implied need is one capability: its best server(s)
            for i in implied:
                row = servers_by_intent[i]
                row[np.argsort(-row, kind="stable")[options.implicit_servers :]] = -np.inf
        best_intent = servers_by_intent.argmax(axis=0)
        server_scores = servers_by_intent.max(axis=0)  # Eq. 5-6: the best intent of each server
        order = [int(s) for s in np.argsort(-server_scores, kind="stable") if np.isfinite(server_scores[s])]
        records = dense + weight * lexical if options.dense else lexical
        top_intent = records.argmax(axis=0)
        tool_scores = records.max(axis=0)
        tool_scores[~np.isfinite(dense.max(axis=0))] = -np.inf

        def hit(position: int) -> ToolHit:
            entry = self.entries[position]
            return ToolHit(
                entry.server, entry.tool, float(tool_scores[position]), intents[top_intent[position]]
            )

        tool_positions = [int(p) for p in np.argsort(-tool_scores, kind="stable") if self._is_tool[p]]
        tool_positions = [p for p in tool_positions if np.isfinite(tool_scores[p])]
        servers = []
        for column in order[: options.k]:
            server, i = self.servers[column], int(best_intent[column])
            own = [hit(p) for p in tool_positions if self.entries[p].server == server][
                : options.tools_per_server
            ]
            mine = np.flatnonzero(self._owner == column)
            via = self.entries[int(mine[np.argmax(records[i, mine])])].kind
            servers.append(ServerHit(server, float(server_scores[column]), intents[i], via, own))
        tools = [hit(p) for p in tool_positions[: options.n_tools]]
        done = time.perf_counter()
        since = decomposed if options.decompose == "llm" else started  # a model's time is reported apart
        return Retrieval(intents, servers, tools, (done - since) * 1000, (decomposed - started) * 1000)
