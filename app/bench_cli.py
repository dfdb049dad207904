"""``aisearch bench models|servers|search|index|soak|faults|page|cache|dag``: run a benchmark of ``bench/`` and write its report.

``register(subparsers)`` adds the ``bench`` group to the main parser (``app/cli.py``). Reports go to
``results/bench-<name>-<date>.{json,md}`` (``evals/run_dirs.py``; a later run of the same day adds
its commit to the name) and the Markdown is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from itertools import chain, count
from pathlib import Path
from typing import Any

from models.config import ROLES


def free_stem(directory: Path, base: str, commit: str | None = None) -> Path:
    """``directory/base``, or when a report of that name exists, ``base-<commit>``, then ``base-2``,
    ``base-3``, …: a second run on the same day never overwrites the first."""
    named = [base, *([f"{base}-{commit}"] if commit else [])]
    numbered = (f"{base}-{n}" for n in count(2))
    return next(
        directory / name for name in chain(named, numbered) if not (directory / f"{name}.json").exists()
    )


def save_report(report: dict[str, Any], name: str, markdown: Callable[[dict[str, Any]], str]) -> Path:
    """Save ``report`` as ``results/bench-<name>-<date>.json`` and ``.md`` (:func:`free_stem`: an
    earlier report of the day is kept); the path without suffix."""
    from evals.run_dirs import RESULTS_DIR

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stem = free_stem(RESULTS_DIR, f"bench-{name}-{report['date']}", report.get("commit"))
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    stem.with_suffix(".md").write_text(markdown(report))
    return stem


def write_report(report: dict[str, Any], name: str, markdown: Callable[[dict[str, Any]], str]) -> None:
    """Save ``report`` (:func:`save_report`) and print its Markdown."""
    save_report(report, name, markdown)
    print(markdown(report))  # noqa: T201 - the command's output


def cmd_models(args: argparse.Namespace) -> int:
    """Benchmark the local models per role and end to end."""
    from bench import models

    report = asyncio.run(models.run(args.repeat, not args.no_routes))
    write_report(report, "models", models.markdown)
    return 0


def cmd_servers(args: argparse.Namespace) -> int:
    """llama-cpp-python's server against llama-server: latency alone and at once, memory."""
    from bench import servers
    from core.settings import load_settings

    if min(args.repeat, args.rounds, args.requests) < 1:
        raise ValueError("--repeat, --rounds and --requests must be at least 1")
    report = asyncio.run(
        servers.run(
            load_settings(args.config), role=args.role, repeat=args.repeat, rounds=args.rounds,
            requests=args.requests,
        )
    )  # fmt: skip
    if args.json:
        save_report(report, "servers", servers.markdown)
        print(json.dumps(report))  # noqa: T201 - the command's output (one JSON object)
    else:
        write_report(report, "servers", servers.markdown)
    return 0


def _guard_servers(args: argparse.Namespace) -> int:
    """``cmd_servers`` with a missing server program or a bad configuration reported in one line."""
    from app.commands import guarded
    from models.config import ConfigError
    from models.errors import LocalServerError

    return guarded(cmd_servers, (ConfigError, ValueError, LocalServerError), code=2)(args)


def cmd_search(args: argparse.Namespace) -> int:
    """Benchmark document search end to end on the default corpus."""
    from bench import search

    report = asyncio.run(search.run())
    write_report(report, "search", search.markdown)
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """Benchmark an index build of synthetic passages: throughput per tenth, peak memory."""
    from bench import index

    report = index.run(args.passages, args.words)
    write_report(report, "index", index.markdown)
    return 0


def cmd_soak(args: argparse.Namespace) -> int:
    """Questions in a row through ``aisearch ask``, memory of every process over time."""
    from bench import search, soak
    from evals.qa_data import load_questions

    if args.data:
        questions = [row["question"] for row in load_questions(args.data, n=args.n)]
    else:
        questions = [question for question, _ in search.QUESTIONS]
        questions = [questions[i % len(questions)] for i in range(args.n)]
    env: dict[str, str] = {}
    if args.index_dir:
        env |= {"AISEARCH_INDEX_DIR": args.index_dir, "AISEARCH_DOCSEARCH_DEFAULT_BUILD": "0"}
    if args.collection:
        env["AISEARCH_DOCSEARCH_COLLECTION"] = args.collection
    report = soak.run(questions, env, sample_s=args.sample_s)
    stem = save_report(report, "soak", soak.markdown)
    soak.plot(report, stem.with_suffix(".png"))
    print(soak.markdown(report))  # noqa: T201 - the command's output
    return 0 if not report["errors"] and not report["leftover_processes"] else 1


def cmd_faults(args: argparse.Namespace) -> int:
    """Backup tools under injected faults: success and P50 latency with and without backups."""
    from bench import faults

    report = asyncio.run(faults.run(args.fail_rate, args.seed))
    if args.json:
        save_report(report, "faults", faults.markdown)
        summary = {key: value for key, value in report.items() if key != "questions"}
        print(json.dumps(summary))  # noqa: T201 - the command's output (one JSON object)
    else:
        write_report(report, "faults", faults.markdown)
    return 0 if report["success_with_backup"] >= report["success_without_backup"] else 1


def cmd_page(args: argparse.Namespace) -> int:
    """Time to the first answer token on the search page against ``aisearch ask``."""
    from bench import page

    try:
        report = page.run(
            args.question,
            args.rounds,
            Path(args.screenshot) if args.screenshot else None,
            stream=not args.no_stream,
            on_run=lambda side, seconds: print(f"{side}: {seconds:.2f} s", file=sys.stderr, flush=True),  # noqa: T201
        )
    except page.BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - the command's output
        return 1
    write_report(report, "page", page.markdown)
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    """The semantic answer cache on repeated, reworded and near-miss questions."""
    from bench import cache
    from tools.cache.answers import CacheLimits

    similarity = args.similarity if args.similarity is not None else CacheLimits.similarity
    if not 0 < similarity <= 1:
        print(f"error: --similarity must be in (0, 1], got {similarity:g}", file=sys.stderr)  # noqa: T201
        return 1
    try:
        data = Path(args.data) if args.data else cache.FIXTURE
        report = cache.run(data, similarity=similarity, team=args.team, seed=args.seed)
    except (cache.FixtureError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - the command's output
        return 1
    from evals.run_dirs import RESULTS_DIR

    results = RESULTS_DIR
    results.mkdir(parents=True, exist_ok=True)
    variant = "" if similarity == CacheLimits.similarity else f"-sim{similarity:g}"
    name = f"bench-cache-{report['date']}{variant}{'-team' if args.team else ''}"
    (results / f"{name}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    (results / f"{name}.md").write_text(cache.markdown(report))
    if args.json:
        summary = {key: value for key, value in report.items() if key != "rows"}
        if "team" in summary:
            summary["team"] = {key: value for key, value in summary["team"].items() if key != "rows"}
        print(json.dumps(summary))  # noqa: T201 - the command's output (one JSON object)
    else:
        print(cache.markdown(report))  # noqa: T201 - the command's output
    return 0 if report["false_hits"] == 0 else 1


def cmd_dag(args: argparse.Namespace) -> int:
    """The same plan run wave-parallel and one task at a time, on HotpotQA comparisons."""
    from bench import dag, dag_report
    from core.settings import load_settings

    if args.n is not None and args.n < 1:
        raise ValueError(f"--n must be at least 1, got {args.n}")
    if args.parallel is not None and args.parallel < 2:
        raise ValueError(f"--parallel must be at least 2 (the sequential mode runs 1), got {args.parallel}")
    data = Path(args.data).expanduser() if args.data else dag.DATA
    report = asyncio.run(
        dag.run(
            load_settings(args.config),
            n=args.n,
            data=data,
            corpus=Path(args.corpus) if args.corpus else data.with_name("corpus.jsonl"),
            collection=args.collection,
            parallel_cap=args.parallel,
            prompt_cache=args.prompt_cache,
        )
    )
    if args.json:
        save_report(report, "dag", dag_report.markdown)
        summary = {key: value for key, value in report.items() if key != "questions"}
        print(json.dumps(summary))  # noqa: T201 - the command's output (one JSON object)
    else:
        write_report(report, "dag", dag_report.markdown)
    return 0


def _guard_dag(args: argparse.Namespace) -> int:
    """``cmd_dag`` with a bad question file, corpus or configuration reported in one line."""
    from app.commands import guarded
    from evals.qa_data import DatasetError
    from models.config import ConfigError
    from models.errors import LocalServerError
    from models.factory import ModelUnavailableError

    errors = (
        DatasetError,
        ConfigError,
        FileNotFoundError,
        ValueError,
        ModelUnavailableError,
        LocalServerError,
    )
    return guarded(cmd_dag, errors, code=2)(args)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``aisearch bench`` commands: ``models``, ``servers``, ``search``, ``index``, ``soak``, ``faults``, ``page``
    ``cache`` and ``dag``."""
    bench = subparsers.add_parser("bench", help="benchmarks")
    sub = bench.add_subparsers(dest="bench_command", required=True)
    models = sub.add_parser("models", help="local model speed per role and end to end")
    models.add_argument("--repeat", type=int, default=5)
    models.add_argument("--no-routes", action="store_true", help="skip the end-to-end route runs")
    models.set_defaults(func=cmd_models)
    servers = sub.add_parser(
        "servers", help="llama-cpp-python's server vs llama-server: one and several requests at once, memory"
    )
    servers.add_argument("--role", default="executor", choices=ROLES, help="whose typical call")
    servers.add_argument("--repeat", type=int, default=5, help="single requests (median)")
    servers.add_argument("--rounds", type=int, default=3, help="rounds of 2 and of 4 requests at once")
    servers.add_argument("--requests", type=int, default=100, help="requests over which memory is sampled")
    servers.add_argument("--json", action="store_true", help="print the report as one JSON object")
    servers.set_defaults(func=_guard_servers)
    search = sub.add_parser(
        "search", help="document search end to end on the standard-library docs (route, citations, latency)"
    )
    search.set_defaults(func=cmd_search)
    index = sub.add_parser("index", help="an index build of synthetic passages: is its throughput flat?")
    index.add_argument("--passages", type=int, default=100_000)
    index.add_argument("--words", type=int, default=60, help="words per synthetic passage")
    index.set_defaults(func=cmd_index)
    soak = sub.add_parser("soak", help="questions in a row through aisearch ask: memory, errors, leftovers")
    soak.add_argument("--n", type=int, default=100, help="number of questions")
    soak.add_argument("--data", help="questions JSONL (HotpotQA format); default: the search benchmark's")
    soak.add_argument("--index-dir", help="index directory the runs search (default: the user's)")
    soak.add_argument("--collection", help="collection docsearch searches by default (e.g. hotpotqa)")
    soak.add_argument("--sample-s", type=float, default=2.0, help="seconds between memory samples")
    soak.set_defaults(func=cmd_soak)
    faults = sub.add_parser(
        "faults", help="backup tools under injected faults: success and P50 latency with and without backups"
    )
    faults.add_argument(
        "--fail-rate", type=float, default=0.3, help="share of the faulty tool's calls that fail"
    )
    faults.add_argument("--seed", type=int, default=0, help="seed of the injected faults")
    faults.add_argument(
        "--json", action="store_true", help="print one JSON object (the report without per-question rows)"
    )
    faults.set_defaults(func=cmd_faults)
    page = sub.add_parser(
        "page", help="time to the first answer token on the search page (Chromium) vs aisearch ask"
    )
    page.add_argument("--question", default="What is the name of Emperor Han-Wu?")
    page.add_argument("--rounds", type=int, default=3, help="runs of each side, taking turns")
    page.add_argument("--screenshot", help="save a PNG of the page after its first run here")
    page.add_argument("--no-stream", action="store_true", help="skip timing the server's own stream")
    page.set_defaults(func=cmd_page)
    cache = sub.add_parser(
        "cache", help="the semantic answer cache: hit rate, false hits on near misses, time saved"
    )
    cache.add_argument("--json", action="store_true", help="print one JSON object (the report without rows)")
    cache.add_argument(
        "--data", help="the labelled questions, JSON lines (default: bench/data/cache_queries.jsonl)"
    )
    cache.add_argument(
        "--similarity", type=float, help="the similarity threshold (default: the cache's, 0.9)"
    )
    cache.add_argument(
        "--team", type=int, default=0, help="also run the real team on this many groups (model-bound)"
    )
    cache.add_argument("--seed", type=int, default=0, help="seed of the stream's order")
    cache.set_defaults(func=cmd_cache)

    dag = sub.add_parser(
        "dag", help="the same plan run wave-parallel and one task at a time (HotpotQA comparisons)"
    )
    dag.add_argument("--n", type=int, default=20, help="questions (the first N parallelisable comparisons)")
    dag.add_argument(
        "--json", action="store_true", help="print one JSON object (the report without its rows)"
    )
    dag.add_argument(
        "--data", help="HotpotQA-format questions JSONL (default ../shared/data/hotpotqa/dev.jsonl)"
    )
    dag.add_argument(
        "--corpus", help="corpus JSONL (title, text) to search (default: corpus.jsonl beside --data)"
    )
    dag.add_argument("--collection", default="hotpotqa", help="collection for the corpus (default hotpotqa)")
    dag.add_argument(
        "--parallel", type=int, help="tasks at once in the parallel mode (default: max_parallel)"
    )
    dag.add_argument(
        "--prompt-cache",
        action="store_true",
        help="the plan and RAG reuse the model server's cached prompt, as `aisearch ask` does "
        "(the two execution modes never do)",
    )
    dag.set_defaults(func=_guard_dag)
