"""``aisearch bench models|search|index``: run a benchmark of ``evals/`` and write its report.

``register(subparsers)`` adds the ``bench`` group to the main parser (``app/cli.py``). Results go to
``evals/results/bench-<name>-<date>.{json,md}`` and the Markdown is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_report(
    report: dict[str, Any], results: Path, name: str, markdown: Callable[[dict[str, Any]], str]
) -> None:
    """Save ``report`` as ``bench-<name>-<date>.json`` and ``.md`` under ``results``; print the Markdown."""
    results.mkdir(parents=True, exist_ok=True)
    stem = results / f"bench-{name}-{report['date']}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    stem.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))  # noqa: T201 - the command's output


def cmd_models(args: argparse.Namespace) -> int:
    """Benchmark the local models per role and end to end."""
    from evals import bench_models

    report = asyncio.run(bench_models.run(args.repeat, not args.no_routes))
    write_report(report, bench_models.RESULTS, "models", bench_models.markdown)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """Benchmark document search end to end on the default corpus."""
    from evals import bench_search

    report = asyncio.run(bench_search.run())
    write_report(report, bench_search.RESULTS, "search", bench_search.markdown)
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """Benchmark an index build of synthetic passages: throughput per tenth, peak memory."""
    from evals import bench_index

    report = bench_index.run(args.passages, args.words)
    write_report(report, bench_index.RESULTS, "index", bench_index.markdown)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``aisearch bench models``, ``aisearch bench search`` and ``aisearch bench index``."""
    bench = subparsers.add_parser("bench", help="benchmarks")
    sub = bench.add_subparsers(dest="bench_command", required=True)
    models = sub.add_parser("models", help="local model speed per role and end to end")
    models.add_argument("--repeat", type=int, default=5)
    models.add_argument("--no-routes", action="store_true", help="skip the end-to-end route runs")
    models.set_defaults(func=cmd_models)
    search = sub.add_parser(
        "search", help="document search end to end on the standard-library docs (route, citations, latency)"
    )
    search.set_defaults(func=cmd_search)
    index = sub.add_parser("index", help="an index build of synthetic passages: is its throughput flat?")
    index.add_argument("--passages", type=int, default=100_000)
    index.add_argument("--words", type=int, default=60, help="words per synthetic passage")
    index.set_defaults(func=cmd_index)
