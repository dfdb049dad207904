"""``aisearch bench cache``: the semantic answer cache on a stream of repeated and reworded
questions and of near-miss pairs (same words, another entity, date, number or conversation).

The fixture (``bench/data/cache_queries.jsonl``, written for this benchmark, each item labelled):

- ``group``: a seed question, its ``repeats`` (the same words, or a change of case or a
  contraction) and ``paraphrases`` (reworded): once the seed is answered, each should hit;
- ``near_miss``: ``a`` and ``b`` differ in what they ask about (``differs``: entity, date, number,
  relation, context; ``a_context``/``b_context`` are earlier user turns): once ``a`` is answered,
  ``b`` must never be served its answer;
- ``novel``: a question nothing before answers: it must miss.

The cache alone (this module) needs only the embedding model: the seeds and every ``a`` are
stored, then the rest is asked in a shuffled order. Reported: hit rates, false hits (must be 0),
why each near miss was refused (the near-miss guard, or the similarity threshold), and the cost
of a lookup. ``--team N`` (``bench/cache_team.py``) also runs the real team on N groups, for the
time a hit saves end to end.
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.machine import machine_line
from tools.cache.answers import AnswerCache, CacheLimits
from tools.cache.near_miss import read
from tools.index.embedder import TextEmbedder, shared_embedder

FIXTURE = Path(__file__).resolve().parent / "data" / "cache_queries.jsonl"
KINDS = {"group": ("seed", "repeats", "paraphrases"), "near_miss": ("a", "b", "differs"), "novel": ("query",)}
CORPUS = "bench"


class FixtureError(ValueError):
    """The fixture file is malformed (the message names the line)."""


def load_fixture(path: Path = FIXTURE) -> list[dict[str, Any]]:
    """The labelled items of ``path`` (JSON lines).

    Raises:
        FixtureError: A line that is not JSON, of an unknown kind, or missing a field.
    """
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FixtureError(f"{path}:{number}: not JSON ({exc.msg})") from None
        kind = item.get("kind") if isinstance(item, dict) else None
        if kind not in KINDS:
            raise FixtureError(f"{path}:{number}: kind must be one of {sorted(KINDS)}, got {kind!r}")
        missing = [field for field in ("id", *KINDS[kind]) if field not in item]
        if missing:
            raise FixtureError(f"{path}:{number}: {kind} item lacks {missing}")
        items.append(item)
    return items


@dataclass(frozen=True)
class Probe:
    """One question of the stream and what should happen to it."""

    item: str
    label: str  # repeat, paraphrase, near_miss, novel
    query: str
    context: tuple[str, ...]
    expect_hit: bool
    detail: str = ""  # a near miss: what differs


def stream(items: list[dict[str, Any]], seed: int = 0) -> tuple[list[Probe], list[Probe]]:
    """The questions answered first (seeds and every near miss's ``a``) and the shuffled stream."""
    stored, asked = [], []
    for item in items:
        if item["kind"] == "group":
            stored.append(Probe(item["id"], "seed", item["seed"], (), False))
            asked += [Probe(item["id"], "repeat", q, (), True) for q in item["repeats"]]
            asked += [Probe(item["id"], "paraphrase", q, (), True) for q in item["paraphrases"]]
        elif item["kind"] == "near_miss":
            stored.append(Probe(item["id"], "seed", item["a"], tuple(item.get("a_context", [])), False))
            context = tuple(item.get("b_context", []))
            asked.append(Probe(item["id"], "near_miss", item["b"], context, False, item["differs"]))
        else:
            asked.append(Probe(item["id"], "novel", item["query"], (), False))
    random.Random(seed).shuffle(asked)
    return stored, asked


def same_words(first: str, second: str) -> bool:
    """Whether two questions are the same words, case and punctuation aside (the fixture asks some
    seeds twice, in another case: either's answer is the right one)."""
    return read(first).tokens == read(second).tokens


def millis(values: list[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` (milliseconds) to one place; 0 for none."""
    return round(float(np.percentile(values, q)), 1) if values else 0.0


def rate(hits: int, total: int) -> float:
    """``hits / total`` to three places (0 when there is nothing)."""
    return round(hits / total, 3) if total else 0.0


def cache_only(
    items: list[dict[str, Any]], embedder: TextEmbedder, similarity: float, seed: int = 0
) -> dict[str, Any]:
    """Store the seeds, ask the stream; every question's outcome and the summary."""
    stored, asked = stream(items, seed)
    seeds = {probe.item: probe.query for probe in stored}
    with tempfile.TemporaryDirectory(prefix="aisearch-bench-cache-") as folder:
        cache = AnswerCache(Path(folder) / "answers.sqlite", embedder, CacheLimits(similarity=similarity))
        embedder.encode(["warm up"])  # the model's load is not a lookup's cost
        store_ms = []
        for probe in stored:
            started = time.perf_counter()
            cache.store(probe.query, probe.context, CORPUS, {"query": probe.query}, 0.0)
            store_ms.append((time.perf_counter() - started) * 1000)
        rows, lookup_ms = [], []
        for probe in asked:
            started = time.perf_counter()
            found = cache.lookup(probe.query, probe.context, CORPUS)
            lookup_ms.append((time.perf_counter() - started) * 1000)
            hit = found.hit
            served = hit.query if hit else None
            rows.append(
                {
                    "item": probe.item,
                    "label": probe.label,
                    "differs": probe.detail,
                    "query": probe.query,
                    "context": list(probe.context),
                    "hit": hit is not None,
                    "served": served,
                    "similarity": hit.similarity if hit else None,
                    "correct_hit": probe.expect_hit
                    and served is not None
                    and same_words(served, seeds[probe.item]),
                    "refused": [{"query": q, "similarity": s, "why": w} for q, s, w in found.refused],
                }
            )
    return summarise(rows, lookup_ms, store_ms, similarity)


def summarise(
    rows: list[dict[str, Any]], lookup_ms: list[float], store_ms: list[float], similarity: float
) -> dict[str, Any]:
    """The report's numbers from the stream's rows."""

    def of(label: str) -> list[dict[str, Any]]:
        return [row for row in rows if row["label"] == label]

    expected = of("repeat") + of("paraphrase")
    near, novel = of("near_miss"), of("novel")
    guarded = [row for row in near if any(r["why"] for r in row["refused"])]
    wrong = sum(row["hit"] and not row["correct_hit"] for row in expected)  # another question's answer
    return {
        "similarity_threshold": similarity,
        "queries": len(rows),
        "expected_hits": len(expected),
        "hits": sum(row["correct_hit"] for row in expected),
        "hit_rate": rate(sum(row["correct_hit"] for row in expected), len(expected)),
        "repeat_hit_rate": rate(sum(row["correct_hit"] for row in of("repeat")), len(of("repeat"))),
        "paraphrase_hit_rate": rate(
            sum(row["correct_hit"] for row in of("paraphrase")), len(of("paraphrase"))
        ),
        "wrong_answer_hits": wrong,
        "near_miss_pairs": len(near),
        "false_hits": sum(row["hit"] for row in [*near, *novel]) + wrong,
        "near_miss_false_hits": sum(row["hit"] for row in near),
        "near_misses_refused_by_guard": len(guarded),
        "near_misses_below_threshold": len(near) - len(guarded) - sum(row["hit"] for row in near),
        "novel_queries": len(novel),
        "lookup_p50_ms": millis(lookup_ms, 50),
        "lookup_p95_ms": millis(lookup_ms, 95),
        "store_p50_ms": millis(store_ms, 50),
        "rows": rows,
    }


def run(
    path: Path = FIXTURE, *, similarity: float = CacheLimits.similarity, team: int = 0, seed: int = 0
) -> dict[str, Any]:
    """The benchmark: the cache alone over the whole fixture, and the team over ``team`` groups."""
    items = load_fixture(path)
    report = {
        "fixture": str(path.name),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_line(),
        "seed": seed,
        **cache_only(items, shared_embedder(), similarity, seed),
    }
    if team:
        from bench.cache_team import team_stream  # the graph and its models load only for --team

        groups = [item for item in items if item["kind"] == "group"][:team]
        report["team"] = asyncio.run(team_stream(groups))
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: the summary, then each near miss and each missed rewording."""
    lines = [
        f"# Semantic answer cache ({report['date']})",
        "",
        f"{report['queries']} questions after {report['fixture']}'s seeds were answered, on "
        f"{report['machine']}; similarity threshold {report['similarity_threshold']}.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| hit rate (repeats and paraphrases) | {report['hit_rate']} ({report['hits']}/{report['expected_hits']}) |",
        f"| repeats / paraphrases | {report['repeat_hit_rate']} / {report['paraphrase_hit_rate']} |",
        f"| false hits (near misses, novel questions, rewordings served another answer) | {report['false_hits']} |",
        f"| near misses refused by the guard / below the threshold | "
        f"{report['near_misses_refused_by_guard']} / {report['near_misses_below_threshold']} of {report['near_miss_pairs']} |",
        f"| lookup P50 / P95 (embedding included) | {report['lookup_p50_ms']} / {report['lookup_p95_ms']} ms |",
        f"| store P50 | {report['store_p50_ms']} ms |",
    ]
    team = report.get("team")
    if team:
        lines += [
            "",
            f"Team run ({team['groups']} groups, {team['queries']} questions): misses P50 {team['miss_p50_s']} s, "
            f"hits P50 {team['hit_p50_s']} s; {team['hits']} hits saved {team['time_saved_s']} s "
            f"({team['saved_share']:.0%} of the stream's time without the cache).",
        ]
    lines += ["", "| item | kind | question | outcome |", "|---|---|---|---|"]
    for row in sorted(report["rows"], key=lambda row: (row["label"], row["item"])):
        if row["label"] == "near_miss" or (
            row["label"] in ("repeat", "paraphrase") and not row["correct_hit"]
        ):
            why = "; ".join(r["why"] for r in row["refused"]) or "below the threshold"
            outcome = f"served the answer to: {row['served']}" if row["hit"] else f"miss ({why})"
            kind = f"{row['label']} ({row['differs']})" if row["differs"] else row["label"]
            lines.append(f"| {row['item']} | {kind} | {row['query']} | {outcome} |")
    return "\n".join(lines) + "\n"
