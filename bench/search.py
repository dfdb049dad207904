"""Benchmark of document search end to end on the default corpus (``aisearch bench search``).

Questions about the Python standard library, each with the documentation page (passage title)
that answers it, run through the whole graph on the configured models over the default ``docs``
collection (built first if it is missing, as on a first ``ask``). Per question: the route and
whether the document probe chose it, the search queries and rounds, whether the expected page was
retrieved and cited, how many answer sentences cite a source (and how many citations the
checker added), wall time and time to the first answer token. Retrieval alone is scored too:
whether the expected page is in the hybrid top 5 for the raw question, and for the question fused
with the executor model's sub-queries. ``aisearch bench search`` saves the report as ``results/bench-search-<date>.{json,md}``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
from datetime import UTC, datetime
from typing import Any

import numpy as np

from agents.search_queries import write_subqueries
from bench.machine import machine_line
from bench.timed_run import timed_run
from core.run import open_run
from core.settings import load_settings
from core.text import CITATION, sentences
from models.config import ROLES
from models.factory import build_chat_model
from tools.index.first_run import ensure_default_collection
from tools.index.paths import DEFAULT_COLLECTION
from tools.index.search import Searcher
from tools.index.store import IndexStore

log = logging.getLogger(__name__)

# (question, titles of the pages that answer it); written by hand against the pydoc corpus
QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("How do I pretty-print JSON in Python?", ("json",)),
    (
        "Which function sorts a list in place?",
        ('Sequence Types — "list", "tuple", "range"', "Mutable Sequence Types"),
    ),
    ("How do I run a shell command and capture its output?", ("subprocess",)),
    ("What does functools.lru_cache do?", ("functools",)),
    ("What does the with statement do?", ('The "with" statement', "Compound statements")),
    ("How do I read a CSV file with a header row?", ("csv — CSV parsing and writing",)),
    (
        "How do I parse a date string into a datetime?",
        ("datetime — Fast implementation of the datetime type",),
    ),
    ("How can I count how often each item occurs in a list?", ("collections",)),
]


def _title_of(titles: dict[str, str], pid: str) -> str:
    return titles.get(pid, "")


async def retrieval_check(store: IndexStore, settings: Any) -> list[dict[str, Any]]:
    """Expected page in the hybrid top 5: raw question vs question fused with the executor's sub-queries."""
    collection = store.require(DEFAULT_COLLECTION)
    searcher = Searcher(collection)
    raw = collection.chroma().get(include=["metadatas"])
    titles = {
        pid: (meta or {}).get("title", "") for pid, meta in zip(raw["ids"], raw["metadatas"], strict=True)
    }
    model = build_chat_model("executor", settings)
    rows = []
    for question, expected in QUESTIONS:
        queries = await write_subqueries(model, question, constrain=settings.role("executor").constrain_json)
        plain = [_title_of(titles, h.id) for h in searcher.rank(question, 5, "hybrid")]
        fused = [_title_of(titles, h.id) for h in searcher.fused([question, *queries], 5)]
        rows.append(
            {
                "question": question,
                "expected": expected,
                "subqueries": queries,
                "hybrid_top5": bool(set(expected) & set(plain)),
                "hybrid_subqueries_top5": bool(set(expected) & set(fused)),
            }
        )
    return rows


async def end_to_end(settings: Any) -> list[dict[str, Any]]:
    """Every question through the whole graph; what was searched, found, cited, and how fast."""
    rows = []
    async with open_run(settings) as opened:
        if "docsearch.search" not in opened.tools.specs:
            raise RuntimeError(f"the docsearch server did not start: {opened.tools.server_errors}")
        for index, (question, expected) in enumerate(QUESTIONS):
            state, seconds, first_token = await timed_run(opened, question, f"q{index}")
            rows.append(_row(question, expected, state, seconds, first_token))
            log.info("%s: %s in %.1f s", question, rows[-1]["route"], seconds)
    return rows


def _row(
    question: str, expected: tuple[str, ...], state: dict[str, Any], seconds: float, first_token: float | None
) -> dict[str, Any]:
    answer = state.get("answer") or {}
    results = list(state.get("results", {}).values())
    searches = [c for r in results for c in r["tool_calls"] if c["tool"] == "docsearch.search"]
    evidence = state.get("evidence", {})
    retrieved = {e["title"] for e in evidence.values() if e["kind"] == "document"}
    cited = [c for c in answer.get("citations", []) if c["kind"] == "document"]
    claims = len(answer.get("uncited_sentences", [])) + _cited_sentences(answer.get("text", ""))
    assessment = state.get("assessment", {})
    return {
        "question": question,
        "expected": expected,
        "route": state.get("route"),
        "probe_similarity": (assessment.get("probe") or {}).get("similarity"),
        "routed_by_probe": assessment.get("escalated") == "documents",
        "queries": [c["args"].get("query") for c in searches],
        "expected_retrieved": bool(set(expected) & retrieved),
        "expected_cited": any(c["title"] in expected for c in cited),
        "document_citations": len(cited),
        "attributed_by_checker": len(answer.get("attributed_citations", [])),
        "dropped_by_checker": len(answer.get("dropped_citations", [])),
        "cited_sentence_share": round(1 - len(answer.get("uncited_sentences", [])) / claims, 2)
        if claims
        else 0.0,
        "seconds": round(seconds, 2),
        "time_to_first_answer_token_s": round(first_token, 2) if first_token else None,
        "answer": answer.get("text", ""),
    }


def _cited_sentences(text: str) -> int:
    return sum(1 for s in sentences(text) if len(s.split()) > 3 and CITATION.search(s))


def summary(rows: list[dict[str, Any]], retrieval: list[dict[str, Any]]) -> dict[str, Any]:
    """Shares and latency percentiles over the questions."""
    seconds = [r["seconds"] for r in rows]
    tokens = [r["time_to_first_answer_token_s"] for r in rows if r["time_to_first_answer_token_s"]]

    def share(key: str, items: list[dict[str, Any]]) -> float:
        return round(sum(1 for item in items if item[key]) / len(items), 3) if items else 0.0

    return {
        "n": len(rows),
        "searched": round(sum(1 for r in rows if r["queries"]) / len(rows), 3) if rows else 0.0,
        "routed_by_probe": share("routed_by_probe", rows),
        "expected_retrieved": share("expected_retrieved", rows),
        "expected_cited": share("expected_cited", rows),
        "cited_sentence_share_mean": round(statistics.fmean(r["cited_sentence_share"] for r in rows), 3)
        if rows
        else 0.0,
        "seconds_p50": round(float(np.percentile(seconds, 50)), 1) if seconds else None,
        "seconds_p80": round(float(np.percentile(seconds, 80)), 1) if seconds else None,
        "first_token_s_p50": round(float(np.percentile(tokens, 50)), 1) if tokens else None,
        "retrieval_hybrid_top5": share("hybrid_top5", retrieval),
        "retrieval_hybrid_subqueries_top5": share("hybrid_subqueries_top5", retrieval),
    }


async def run() -> dict[str, Any]:
    """Build the default collection if needed, then measure retrieval and the end-to-end runs."""
    settings = load_settings()  # the first chat model built starts the local server if a role needs it
    store = IndexStore()
    build = await asyncio.to_thread(ensure_default_collection, store)
    retrieval = await retrieval_check(store, settings)
    rows = await end_to_end(settings)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_line(),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "models": {role: settings.role(role).model for role in ROLES},
        "collection": {
            "passages": int(store.collection(DEFAULT_COLLECTION).state().get("passages", 0)),
            "built_now_s": round(build.seconds, 1) if build else None,
        },
        "summary": summary(rows, retrieval),
        "retrieval": retrieval,
        "questions": rows,
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown."""
    s = report["summary"]
    lines = [
        f"# Document search on the standard-library docs ({report['date']}, {report['machine']})",
        "",
        f"{s['n']} questions, {report['collection']['passages']} passages; models {report['models']}.",
        f"Searched {s['searched']:.0%} (probe-routed {s['routed_by_probe']:.0%}); expected page retrieved "
        f"{s['expected_retrieved']:.0%}, cited {s['expected_cited']:.0%}; mean share of answer sentences with "
        f"a citation {s['cited_sentence_share_mean']:.2f}; seconds P50 {s['seconds_p50']} / P80 "
        f"{s['seconds_p80']}; first answer token P50 {s['first_token_s_p50']} s.",
        f"Retrieval, expected page in the hybrid top 5: raw question {s['retrieval_hybrid_top5']:.0%}, "
        f"question + executor sub-queries {s['retrieval_hybrid_subqueries_top5']:.0%}.",
        "",
        "| question | route | queries | expected retrieved / cited | citations (checker added) | s | first token s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["questions"]:
        lines.append(
            f"| {r['question']} | {r['route']}{' (probe)' if r['routed_by_probe'] else ''} | {len(r['queries'])} | "
            f"{'yes' if r['expected_retrieved'] else 'no'} / {'yes' if r['expected_cited'] else 'no'} | "
            f"{r['document_citations']} ({r['attributed_by_checker']}) | {r['seconds']} | "
            f"{r['time_to_first_answer_token_s']} |"
        )
    lines += ["", "Command: `aisearch bench search`"]
    return "\n".join(lines) + "\n"
