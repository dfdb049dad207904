"""CLI commands for the document index: ``aisearch index …`` and ``aisearch eval retrieval …``.

``register(subparsers)`` adds them to the main parser (``app/cli.py``); every leaf command sets
``func=callable(args) -> int``. ``python -m app.index_cli index PATH`` runs them without the main CLI.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
from typing import Any

from app.commands import Handler, command_group, echo, guarded
from tools.index.errors import IndexUserError
from tools.index.paths import DEFAULT_COLLECTION, INDEX_DIR_ENV

log = logging.getLogger(__name__)


def _guard(handler: Handler) -> Handler:
    """Turn the expected errors into a one-line message on stderr and exit code 1."""
    return guarded(handler, (IndexUserError, FileNotFoundError, ValueError), code=1)


def _store(args: argparse.Namespace) -> Any:
    from tools.index.store import IndexStore

    return IndexStore(args.index_dir) if args.index_dir else IndexStore()


def cmd_index(args: argparse.Namespace) -> int:
    """Index files and folders (or the Python docs with ``--default``) into a collection."""
    from tools.index.paths import validate_collection_name

    store = _store(args)
    if args.list:
        rows = [{"name": n, **_brief(store.collection(n).state())} for n in store.names()]
        if args.json:
            echo(json.dumps(rows, indent=2))
        else:
            echo(f"index: {store.root}")
            for row in rows:
                echo(
                    f"  {row['name']}: {row['passages']} passages from {row['sources']} sources ({row['updated']})"
                )
        return 0
    if not args.paths and not args.default:
        raise IndexUserError(
            "nothing to index: give files or folders (e.g. `aisearch index ./my-docs`) or --default"
        )
    validate_collection_name(args.collection)
    reports = []
    if args.default:
        from tools.index.service import build_default_collection

        echo(
            "indexing the Python standard library documentation (pydoc topics and module docstrings)",
            err=True,
        )
        reports.append(build_default_collection(store, args.collection, show_progress=not args.quiet))
    if args.paths:
        from tools.index.ingest import index_paths

        reports.append(index_paths(args.paths, args.collection, store=store, show_progress=not args.quiet))
    for report in reports:
        if args.json:
            echo(json.dumps({**report.as_dict(), "index_dir": str(store.root)}, indent=2))
        else:
            echo(report.summary())
            for failure in report.failed:
                echo(f"  failed: {failure}", err=True)
    return 1 if any(report.failed for report in reports) else 0


def _brief(state: dict[str, Any]) -> dict[str, Any]:
    return {
        "passages": state.get("passages", 0),
        "sources": state.get("sources", 0),
        "status": state.get("status", "?"),
        "updated": state.get("updated", "?"),
    }


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    """Measure retrieval recall and latency on HotpotQA-format data; print one JSON object."""
    from evals import retrieval
    from evals.run_dirs import RESULTS_DIR

    rerank_chat = None
    if args.rerank:
        from models.factory import chat_from_environment

        rerank_chat = chat_from_environment()
    subqueries = retrieval.load_subqueries(args.subqueries) if args.subqueries else None
    generation = None
    if args.executor_subqueries:
        generation = _executor_subqueries(args)
        subqueries = {**(subqueries or {}), **generation.pop("queries")}
    result = retrieval.run(
        args.data,
        args.corpus,
        n=args.n,
        collection=args.collection,
        index_dir=args.index_dir,
        rerank_chat=rerank_chat,
        subqueries=subqueries,
        show_progress=not args.quiet,
    )
    if generation is not None:
        result["subqueries"] = generation
    command = _eval_command(args)
    if not args.no_write:
        json_path, md_path = retrieval.write_results(result, args.out or RESULTS_DIR, command)
        result["written"] = [str(json_path), str(md_path)]
    if args.json:
        echo(json.dumps(result, indent=2))
    else:
        echo(retrieval.markdown(result, command))
        for path in result.get("written", []):
            echo(f"wrote {path}", err=True)
    return 0


def _executor_subqueries(args: argparse.Namespace) -> dict[str, Any]:
    """Generate (or reuse) the executor model's sub-queries for the questions of this run."""
    import asyncio
    import re
    from pathlib import Path

    from core.settings import load_settings
    from evals import retrieval
    from evals.subqueries import executor_subqueries
    from models.factory import build_chat_model

    settings = load_settings()
    role = settings.role("executor")  # a local role's model starts the embedded server when built
    questions = retrieval.load_questions(args.data, args.n)
    index_dir = Path(args.index_dir) if args.index_dir else retrieval.default_eval_index_dir()
    cache = index_dir / f"subqueries-{re.sub(r'[^A-Za-z0-9._-]+', '_', role.model)}.jsonl"
    generation = asyncio.run(
        executor_subqueries(
            questions,
            build_chat_model("executor", settings),
            role.model,
            cache,
            constrain=role.constrain_json,
            show_progress=not args.quiet,
        )
    )
    return {**generation, "model": role.model, "cache": str(cache)}


def _eval_command(args: argparse.Namespace) -> str:
    """The command line that reproduces this evaluation."""
    words = ["aisearch", "eval", "retrieval", "--data", args.data, "--corpus", args.corpus]
    if args.n:
        words += ["--n", str(args.n)]
    if args.collection != "hotpotqa":
        words += ["--collection", args.collection]
    words += ["--rerank"] if args.rerank else []
    words += ["--subqueries", args.subqueries] if args.subqueries else []
    words += ["--executor-subqueries"] if args.executor_subqueries else []
    return shlex.join(words)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch index`` and ``aisearch eval retrieval``."""
    index = subparsers.add_parser(
        "index",
        help="index documents for the docsearch MCP server",
        description="Index Markdown, text/reST, HTML and JSONL (title/text/url) files into a collection. "
        "Re-running is incremental: unchanged files do no work, removed files leave the index. "
        f"The index lives in ${INDEX_DIR_ENV} (default ~/.local/share/aisearch/index); with "
        "$AISEARCH_CHROMA_URL set, its passages and vectors go to that chroma server.",
    )
    index.add_argument("paths", nargs="*", help="files or folders to index")
    index.add_argument("--collection", default=DEFAULT_COLLECTION, help="collection name (default: docs)")
    index.add_argument(
        "--default",
        action="store_true",
        help="index the Python standard library documentation (the default corpus)",
    )
    index.add_argument(
        "--index-dir", help=f"index directory (default ${INDEX_DIR_ENV} or ~/.local/share/aisearch/index)"
    )
    index.add_argument("--list", action="store_true", help="list the collections and exit")
    index.add_argument("--json", action="store_true", help="print the report as JSON")
    index.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    index.set_defaults(func=_guard(cmd_index))

    group = command_group(subparsers, "eval", "evaluations", "eval_command")
    retrieval = group.add_parser(
        "retrieval",
        help="recall@k of gold titles and query latency for bm25, dense, hybrid (and rerank)",
        description="Index a HotpotQA-format corpus (or reuse its index) and measure retrieval of the "
        "questions' supporting titles.",
    )
    retrieval.add_argument("--data", required=True, help="questions JSONL (question, supporting_titles)")
    retrieval.add_argument("--corpus", required=True, help="corpus JSONL (title, text)")
    retrieval.add_argument("--n", type=int, help="only the first N questions")
    retrieval.add_argument("--json", action="store_true", help="print one JSON object")
    retrieval.add_argument("--rerank", action="store_true", help="add hybrid + LLM listwise rerank (slow)")
    retrieval.add_argument("--subqueries", help='JSONL {"id", "queries": [...]}: add hybrid over sub-queries')
    retrieval.add_argument(
        "--executor-subqueries",
        action="store_true",
        help="add hybrid over the executor model's sub-queries (its search loop's first round; cached)",
    )
    retrieval.add_argument(
        "--collection", default="hotpotqa", help="collection for the corpus (default hotpotqa)"
    )
    retrieval.add_argument("--index-dir", help="index directory (default ~/.local/share/aisearch/eval-index)")
    retrieval.add_argument("--out", help="results directory (default results/)")
    retrieval.add_argument("--no-write", action="store_true", help="do not write results files")
    retrieval.add_argument("-q", "--quiet", action="store_true", help="no progress bars on stderr")
    retrieval.set_defaults(func=_guard(cmd_eval_retrieval))


def main(argv: list[str] | None = None) -> int:
    """Run ``index`` or ``eval retrieval`` without the main CLI."""
    parser = argparse.ArgumentParser(prog="aisearch")
    parser.add_argument("-v", "--verbose", action="store_true")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
