"""Retrieval quality and speed on HotpotQA-format data: recall of the gold supporting titles.

``aisearch eval retrieval --data dev.jsonl --corpus corpus.jsonl [--n N] [--json] [--rerank]``

* ``--corpus``: JSONL, one paragraph per line with ``title`` and ``text`` (and optionally ``url``,
  ``id``). It is indexed into a named collection (default ``hotpotqa``) of the evaluation index
  (default ``~/.local/share/aisearch/eval-index``); an unchanged corpus reuses the index.
* ``--data``: JSONL questions with ``question`` and ``supporting_titles`` (and optionally ``id``,
  ``answer``, ``type``).

Recall@k is the share of a question's gold titles found among the titles of the top-k passages,
averaged over questions; both@k is the share of questions with every gold title in the top k.
Latency is the wall time of one ranker call (query embedding included), one query at a time.
The JSON printed (and written to ``results/retrieval-<date>.json`` with a Markdown table):
``n``, ``recall@5``, ``recall@10``, ``both@5``, ``both@10``, ``query_ms_p50``, ``query_ms_p95``
(each keyed by ranker: ``bm25``, ``dense``, ``hybrid``, ``hybrid_links`` (the serial strategy's
evidence: hybrid top 3, then the 2 documents they name, then the rest of hybrid), and
``hybrid_rerank`` / ``hybrid_subqueries`` when enabled), ``build_seconds``, ``index_bytes`` and the run's settings.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.strategies import FIRST_HOP_K, LINK_K
from evals.run_dirs import RESULTS_DIR
from evals.stats import percentile
from models.factory import ChatFn
from tools.index.ingest import index_sources
from tools.index.paths import default_index_dir
from tools.index.rerank import ListwiseReranker
from tools.index.search import Searcher
from tools.index.sources import file_source
from tools.index.store import IndexStore

log = logging.getLogger(__name__)

BASE_RANKERS = ("bm25", "dense", "hybrid")
KS = (5, 10)


def default_eval_index_dir() -> Path:
    """The evaluation index, next to the user's index: ``…/aisearch/eval-index``."""
    return default_index_dir().parent / "eval-index"


def load_questions(path: str | Path, n: int | None = None) -> list[dict[str, Any]]:
    """The first ``n`` questions of a HotpotQA-format JSONL file (every one if ``n`` is None).

    Raises:
        ValueError: When a line lacks ``question`` or ``supporting_titles``.
    """
    questions = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            if "question" not in record or "supporting_titles" not in record:
                raise ValueError(f"{path}:{number}: a question needs 'question' and 'supporting_titles'")
            record.setdefault("id", f"q{number}")
            questions.append(record)
            if n is not None and len(questions) >= n:
                break
    return questions


def load_subqueries(path: str | Path) -> dict[str, list[str]]:
    """Sub-queries per question from JSONL lines ``{"id" or "question", "queries": [...]}``."""
    result: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                key = str(record.get("id") or record.get("question"))
                result[key] = [str(q) for q in record.get("queries", []) if str(q).strip()]
    return result


def gold_recall(gold: Sequence[str], titles: Sequence[str]) -> float:
    """Share of the gold titles that appear in ``titles``."""
    gold_set = set(gold)
    return len(gold_set & set(titles)) / len(gold_set) if gold_set else 0.0


def dir_bytes(path: Path) -> int:
    """Total size of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def run(
    data: str | Path,
    corpus: str | Path,
    *,
    n: int | None = None,
    collection: str = "hotpotqa",
    index_dir: str | Path | None = None,
    rerank_chat: ChatFn | None = None,
    subqueries: dict[str, list[str]] | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Index ``corpus`` (or reuse it), rank every question with each ranker, and score the results."""
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load_before = os.getloadavg()
    store = IndexStore(index_dir or default_eval_index_dir())
    target = store.collection(collection)
    corpus_path = Path(corpus).expanduser().resolve()
    report = index_sources(
        target,
        [file_source(corpus_path)],
        in_scope=lambda key: key != str(corpus_path),
        show_progress=show_progress,
    )
    questions = load_questions(data, n)
    reranker = ListwiseReranker(rerank_chat) if rerank_chat else None
    searcher = Searcher(store.require(collection), reranker=reranker)
    titles = _titles(target)

    def ranker(name: str) -> Callable[[dict[str, Any]], list[str]]:
        return lambda q: [h.id for h in searcher.rank(q["question"], max(KS), name)]

    rankers = {name: ranker(name) for name in BASE_RANKERS}
    rankers["hybrid_links"] = lambda q: linked_ranking(searcher, q["question"], max(KS))
    if reranker is not None:
        rankers["hybrid_rerank"] = lambda q: [
            h.id for h in searcher.rank(q["question"], max(KS), "hybrid", True)
        ]
    if subqueries is not None:
        rankers["hybrid_subqueries"] = lambda q: [
            h.id for h in searcher.fused([q["question"], *subqueries.get(_key(q), [])], max(KS))
        ]
    searcher.rank("warm up the model and the BM25 index", 1, "hybrid")
    scores = _score(questions, rankers, titles, show_progress)
    result: dict[str, Any] = {"n": len(questions), "rankers": list(rankers), **scores}
    result.update(
        {
            "collection": collection,
            "data": str(Path(data).resolve()),
            "corpus": str(corpus_path),
            "passages": report.passages_total,
            "build_seconds": round(report.seconds, 2),
            "build": {
                "reused": report.changed == 0,
                "embedded": report.embedded,
                "embed_seconds": round(report.embed_seconds, 2),
                "last_full_build": target.state().get("full_build"),
            },
            "index_dir": str(store.root),
            "index_bytes": dir_bytes(store.root),
            "index_mb": round(dir_bytes(store.root) / 1e6, 1),
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "load_average_before": [round(x, 2) for x in load_before],
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
            },
            "date": started_at,
        }
    )
    if report.changed:  # remember the cost of a build from scratch for later reuse runs
        full = {"seconds": round(report.seconds, 2), "embedded": report.embedded, "date": started_at}
        target.write_state(full_build=full)
        result["build"]["last_full_build"] = full
    return result


def linked_ranking(searcher: Searcher, question: str, n: int) -> list[str]:
    """The serial strategy's passages: the question's hybrid top ``FIRST_HOP_K``, the ``LINK_K``
    documents they name (``Searcher.linked``), then the rest of the hybrid ranking up to ``n``."""
    ranked = [hit.id for hit in searcher.rank(question, n, "hybrid")]
    first = ranked[:FIRST_HOP_K]
    linked = [hit.id for hit in searcher.linked(question, first, LINK_K)]
    return list(dict.fromkeys([*first, *linked, *ranked[FIRST_HOP_K:]]))[:n]


def _key(question: dict[str, Any]) -> str:
    return str(question.get("id") or question["question"])


def _titles(collection: Any) -> dict[str, str]:
    return {pid: title for pid, title, _ in collection.titles()}


def _score(
    questions: Sequence[dict[str, Any]],
    rankers: dict[str, Callable[[dict[str, Any]], list[str]]],
    titles: dict[str, str],
    show_progress: bool,
) -> dict[str, Any]:
    from tqdm import tqdm

    recall: dict[int, dict[str, list[float]]] = {k: {r: [] for r in rankers} for k in KS}
    both: dict[int, dict[str, list[float]]] = {k: {r: [] for r in rankers} for k in KS}
    latency: dict[str, list[float]] = {r: [] for r in rankers}
    by_type: dict[str, dict[str, list[float]]] = {}
    for question in tqdm(questions, desc="questions", file=sys.stderr, disable=not show_progress):
        gold = question["supporting_titles"]
        for name, rank in rankers.items():
            started = time.perf_counter()
            ids = rank(question)
            latency[name].append((time.perf_counter() - started) * 1000)
            found = [titles.get(pid, "") for pid in ids]
            for k in KS:
                value = gold_recall(gold, found[:k])
                recall[k][name].append(value)
                both[k][name].append(float(value == 1.0))
            if question.get("type"):
                by_type.setdefault(str(question["type"]), {}).setdefault(name, []).append(
                    recall[10][name][-1]
                )

    def mean(values: list[float]) -> float:
        return round(statistics.fmean(values), 4) if values else 0.0

    result: dict[str, Any] = {}
    for k in KS:
        result[f"recall@{k}"] = {r: mean(v) for r, v in recall[k].items()}
    for k in KS:
        result[f"both@{k}"] = {r: mean(v) for r, v in both[k].items()}
    result["query_ms_p50"] = {r: round(percentile(v, 50), 1) for r, v in latency.items()}
    result["query_ms_p95"] = {r: round(percentile(v, 95), 1) for r, v in latency.items()}
    if by_type:
        result["recall@10_by_type"] = {
            t: {"n": len(next(iter(v.values()))), **{r: mean(x) for r, x in v.items()}}
            for t, v in by_type.items()
        }
    return result


def markdown(result: dict[str, Any], command: str = "") -> str:
    """A Markdown report: one row per ranker, plus the build and machine details."""
    lines = [
        f"# Retrieval on {Path(result['data']).name} over {Path(result['corpus']).name}",
        "",
        f"{result['n']} questions, {result['passages']} passages in collection `{result['collection']}`; "
        f"{result['date']}; {result['machine']['cpus']} CPUs, {result['machine']['platform']}, "
        f"load average before/after {result['machine']['load_average_before'][0]}/"
        f"{result['machine']['load_average_after'][0]}.",
        "",
        "| ranker | recall@5 | recall@10 | both@5 | both@10 | query P50 ms | query P95 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for ranker in result["rankers"]:
        lines.append(
            f"| {ranker} | {result['recall@5'][ranker]:.3f} | {result['recall@10'][ranker]:.3f} | "
            f"{result['both@5'][ranker]:.3f} | {result['both@10'][ranker]:.3f} | "
            f"{result['query_ms_p50'][ranker]:.1f} | {result['query_ms_p95'][ranker]:.1f} |"
        )
    build = result["build"]
    full = build.get("last_full_build") or {}
    lines += [
        "",
        f"Index: {result['index_mb']} MB on disk ({result['index_dir']}); this run's indexing took "
        f"{result['build_seconds']} s ({'reused' if build['reused'] else 'built'}, {build['embedded']} passages embedded)"
        + (
            f"; last build from scratch: {full['seconds']} s for {full['embedded']} passages."
            if full
            else "."
        ),
    ]
    if command:
        lines += ["", f"Command: `{command}`"]
    return "\n".join(lines) + "\n"


def write_results(
    result: dict[str, Any], out_dir: str | Path = RESULTS_DIR, command: str = ""
) -> tuple[Path, Path]:
    """Write ``retrieval-<date>.json`` and ``retrieval-<date>.md`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"retrieval-{time.strftime('%Y-%m-%d')}"
    json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
    json_path.write_text(json.dumps({**result, "command": command}, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(markdown(result, command), encoding="utf-8")
    return json_path, md_path
