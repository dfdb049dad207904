"""Intent-aware retrieval over the tool index (TURA §4.1 with Tool-to-Agent's lifting).

For each intent of the query (``tools/catalog/decompose.py``) every record is scored: the cosine
of the intent with the record's vector, plus ``bm25_weight`` times its BM25 score divided by the
intent's best BM25 score (hybrid; our choice of fusion, since neither paper fixes one). Walking the
records best first, a record lifts to its owner server at its first occurrence, so a server's score
is the best of its vectors (MaxSim, TURA Eq. 4; Tool-to-Agent Alg. 1). The walk over-fetches
``overfetch * k`` records and doubles that until ``k`` servers are found. A server's final score is
its best over the intents (Eq. 5-6), kept with the intent that gave it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.catalog.decompose import Mode, decompose
from tools.catalog.index import ToolIndex
from tools.catalog.tokens import tokenize

if TYPE_CHECKING:
    from models.factory import ChatFn

DEFAULT_KINDS = frozenset({"server", "tool", "query"})


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
        synthetic_limit: Use only the first N synthetic queries of each server (None: all).
        overfetch: Records walked per intent, as a multiple of ``k`` (doubled until ``k`` servers).
        n_tools: Length of the catalogue-wide tool ranking returned with the servers.
    """

    k: int = 5
    tools_per_server: int = 3
    kinds: frozenset[str] = DEFAULT_KINDS
    dense: bool = True
    bm25_weight: float = 0.3
    decompose: Mode = "rules"
    keep_query: bool = True
    synthetic_limit: int | None = None
    overfetch: int = 10
    n_tools: int = 10


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

    def _mask(self, options: RetrievalOptions) -> Any:
        import numpy as np

        mask = np.isin(self._kind, sorted(options.kinds))
        if options.synthetic_limit is not None:
            mask &= ~((self._kind == "query") & (self._order >= options.synthetic_limit))
        return mask

    def scores(self, intents: list[str], options: RetrievalOptions) -> Any:
        """Hybrid scores: one row per intent, one column per record (``-inf`` for unused kinds)."""
        import numpy as np

        rows = np.zeros((len(intents), len(self.entries)), dtype=np.float64)
        if options.dense:
            vectors = self.index.embedder.encode(intents, threads=1)
            rows += np.stack([self.index.dense.scores(v) for v in vectors])
        if options.bm25_weight > 0 or not options.dense:
            weight = options.bm25_weight if options.dense else 1.0
            for row, intent in zip(rows, intents, strict=True):
                lexical = self.index.bm25.scores(" ".join(tokenize(intent)))
                best = float(lexical.max()) if len(lexical) else 0.0
                if best > 0:
                    row += weight * lexical / best
        rows[:, ~self._mask(options)] = -np.inf
        return rows

    def _lift(self, row: Any, k: int, overfetch: int) -> dict[str, tuple[float, int]]:
        """Servers in the order their first record appears (``server -> (score, record)``)."""
        import numpy as np

        order = np.argsort(-row, kind="stable")
        found: dict[str, tuple[float, int]] = {}
        depth, start = max(1, overfetch * k), 0
        while len(found) < k and start < len(order):
            for position in order[start:depth]:
                if not np.isfinite(row[position]):
                    return found
                owner = self.entries[position].server
                if owner not in found:
                    found[owner] = (float(row[position]), int(position))
            start, depth = depth, depth * 2
        return found

    def search(
        self, query: str, options: RetrievalOptions | None = None, *, chat: ChatFn | None = None
    ) -> Retrieval:
        """The top-K servers for ``query``, their top tools, and the catalogue-wide tool ranking."""
        import numpy as np

        options = options or RetrievalOptions()
        started = time.perf_counter()
        intents = decompose(query, options.decompose, chat=chat, keep_query=options.keep_query)
        decomposed = time.perf_counter()
        rows = self.scores(intents, options)
        best: dict[str, tuple[float, int, int]] = {}
        for i, row in enumerate(rows):
            for server, (score, position) in self._lift(row, options.k, options.overfetch).items():
                if server not in best or score > best[server][0]:
                    best[server] = (score, position, i)
        ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[: options.k]
        top_intent = rows.argmax(axis=0)
        tool_scores = rows.max(axis=0)

        def hit(position: int) -> ToolHit:
            entry = self.entries[position]
            return ToolHit(
                entry.server, entry.tool, float(tool_scores[position]), intents[top_intent[position]]
            )

        tool_positions = [int(p) for p in np.argsort(-tool_scores, kind="stable") if self._is_tool[p]]
        tool_positions = [p for p in tool_positions if np.isfinite(tool_scores[p])]
        servers = []
        for server, (score, position, i) in ranked:
            own = [hit(p) for p in tool_positions if self.entries[p].server == server][
                : options.tools_per_server
            ]
            servers.append(ServerHit(server, score, intents[i], self.entries[position].kind, own))
        tools = [hit(p) for p in tool_positions[: options.n_tools]]
        done = time.perf_counter()
        since = decomposed if options.decompose == "llm" else started  # a model's time is reported apart
        return Retrieval(intents, servers, tools, (done - since) * 1000, (decomposed - started) * 1000)
