"""The team's side of ``aisearch bench cache --team N``: the time a cache hit saves end to end.

The real graph (the configured models and MCP servers, the user's document index) answers each of
N groups' seed question, then its repeats and paraphrases, each on a new thread, with the answer
and tool-call caches on in a temporary folder. A hit's saving is the team's time for the answer it
served (``answer.cached.saved_s``) minus the hit's own wall time. Model-bound: keep N small.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from core.run import RunContext, open_run
from core.settings import Settings, load_settings
from core.state import InputState
from graph.builder import build_graph


def questions(groups: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """``(group id, label, question)``: each group's seed, then its repeats and paraphrases."""
    asked = []
    for group in groups:
        asked.append((group["id"], "seed", group["seed"]))
        asked += [(group["id"], "repeat", query) for query in group["repeats"]]
        asked += [(group["id"], "paraphrase", query) for query in group["paraphrases"]]
    return asked


async def team_stream(groups: list[dict[str, Any]], settings: Settings | None = None) -> dict[str, Any]:
    """Ask ``groups``' questions through the team with the caches on; times, hits and savings."""
    base = settings or load_settings()
    rows = []
    with tempfile.TemporaryDirectory(prefix="aisearch-bench-cache-team-") as folder:
        cache = base.cache.model_copy(update={"answers": True, "tools": True})
        update = {"db_path": Path(folder) / "threads.sqlite", "cache": cache, "bypass_cache": False}
        async with open_run(base.model_copy(update=update), cache=True) as run:
            graph = build_graph(checkpointer=InMemorySaver())
            for number, (group, label, query) in enumerate(questions(groups)):
                config = RunnableConfig(configurable={"thread_id": f"bench-cache-{number}"})
                started = time.perf_counter()
                values = await graph.ainvoke(InputState(query=query), config, context=RunContext(run=run))
                seconds = round(time.perf_counter() - started, 3)
                answer = values.get("answer") or {}
                cached = answer.get("cached")
                rows.append(
                    {
                        "group": group,
                        "label": label,
                        "query": query,
                        "seconds": seconds,
                        "route": values.get("route"),
                        "hit": cached is not None,
                        "served": cached["query"] if cached else None,
                        "saved_s": round(cached["saved_s"] - seconds, 3) if cached else 0.0,
                        "short": answer.get("short", ""),
                    }
                )
    hits = [row for row in rows if row["hit"]]
    misses = [row for row in rows if not row["hit"]]
    saved = round(sum(row["saved_s"] for row in hits), 2)
    spent = sum(row["seconds"] for row in rows)
    return {
        "groups": len(groups),
        "queries": len(rows),
        "hits": len(hits),
        "miss_p50_s": round(statistics.median(row["seconds"] for row in misses), 2) if misses else 0.0,
        "hit_p50_s": round(statistics.median(row["seconds"] for row in hits), 3) if hits else 0.0,
        "time_saved_s": saved,
        "saved_share": round(saved / (spent + saved), 3) if spent + saved else 0.0,
        "rows": rows,
    }
