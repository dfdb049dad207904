"""``aisearch eval qa | cqed | report | compare | routes``: answer quality against same-model RAG
(HotpotQA with gold answers; SRSA's contextual queries with SRSA's judge), the reports, and the
Master's route decisions alone."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from app.commands import Handler, command_group, guarded
from evals.qa_data import DatasetError

QA_KEYS = (
    "n",
    "em",
    "f1",
    "cover",
    "baseline_em",
    "baseline_f1",
    "baseline_cover",
    "nwr",
    "route_counts",
    "errors",
    "latency_p50_s",
    "baseline_latency_p50_s",
)


JUDGE_TIMEOUT_S = 600.0  # a CQED judge reply (ratings and CSV, up to 1,024 tokens) on a CPU


def _qa_command(args: argparse.Namespace) -> str:
    """The command line that reproduces (or resumes) this run."""
    words = ["aisearch", "eval", "qa", "--data", args.data]
    if args.corpus:
        words += ["--corpus", args.corpus]
    for flag in ("n", "offset", "seed", "concurrency"):
        value = getattr(args, flag)
        if value not in (None, 0, 1) or (flag == "n" and value is not None):
            words += [f"--{flag}", str(value)]
    words += ["--split", args.split] if args.split != "all" else []
    words += ["--type", args.type] if args.type else []
    words += ["--systems", args.systems] if args.systems != "aisearch,rag" else []
    words += ["--no-judge"] if args.no_judge else []
    words += ["--run", args.run] if args.run else []
    return shlex.join(words)


def cmd_qa(args: argparse.Namespace) -> int:
    """Run the side-by-side evaluation and print its summary."""
    import shutil

    from core.settings import load_settings
    from evals.qa_context import open_context
    from evals.qa_data import load_questions
    from evals.qa_runner import QAOptions, default_run_dir, run_qa
    from evals.run_dirs import named_run_dir

    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    unknown = [s for s in systems if s not in ("aisearch", "rag", "closed_book")]
    if unknown or not systems:
        raise ValueError(f"--systems takes aisearch, rag, closed_book (got {args.systems!r})")
    if "rag" in systems and not args.corpus:
        raise ValueError("the rag baseline needs --corpus (the documents it retrieves from)")
    options = QAOptions(
        data=Path(args.data).expanduser().resolve(),
        n=args.n,
        offset=args.offset,
        seed=args.seed,
        split=args.split,
        kind=args.type,
        systems=systems,
        judge=not args.no_judge,
        concurrency=max(1, args.concurrency),
        question_timeout_s=args.question_timeout,
        upload=args.upload,
        command=_qa_command(args),
    )
    run_dir = named_run_dir(args.run) if args.run else default_run_dir(options)
    options.run_dir = run_dir
    if args.fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    questions = load_questions(
        options.data, options.n, options.offset, options.seed, options.split, options.kind
    )  # fail fast
    settings = load_settings(args.config)

    async def go() -> dict[str, Any]:
        async with open_context(
            settings,
            corpus=Path(args.corpus) if args.corpus else None,
            systems=systems,
            judge=options.judge,
            collection=args.collection,
            index_dir=Path(args.index_dir) if args.index_dir else None,
            judge_model=args.judge_model,
            judge_base_url=args.judge_base_url,
            show_progress=not args.quiet,
        ) as context:
            return await run_qa(options, context, questions=questions, show_progress=not args.quiet)

    summary = asyncio.run(go())
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print((run_dir / "report.md").read_text(encoding="utf-8"))
        print(f"results: {run_dir}", file=sys.stderr)
    return 0


def cmd_cqed(args: argparse.Namespace) -> int:
    """Run SRSA's contextual queries through the three systems, judge them blind, print the summary."""
    import shutil

    from core.settings import load_settings
    from evals.cqed import CqedOptions, default_run_dir, run_cqed
    from evals.cqed_judge import CqedJudge
    from evals.qa_context import open_context
    from evals.qa_data import load_questions
    from evals.run_dirs import named_run_dir
    from tools.index.paths import default_index_dir

    settings = load_settings(args.config)
    index_dir = Path(args.index_dir).expanduser().resolve() if args.index_dir else default_index_dir()
    collection = args.collection or settings.docsearch.collection
    words = ["aisearch", "eval", "cqed", "--data", args.data]
    for flag in ("n", "offset", "seed", "run", "index_dir", "collection", "judge_base_url", "judge_model"):
        if getattr(args, flag) not in (None, 0):
            words += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    options = CqedOptions(
        data=Path(args.data).expanduser().resolve(),
        n=args.n,
        offset=args.offset,
        seed=args.seed,
        question_timeout_s=args.question_timeout,
        judge_model=args.judge_model,
        judge_base_url=args.judge_base_url,
        judge_context_tokens=args.judge_context or settings.local.n_ctx,
        index=f"{index_dir}:{collection}",
        command=shlex.join(words),
    )
    options.run_dir = named_run_dir(args.run) if args.run else default_run_dir(options)
    if args.fresh and options.run_dir.exists():
        shutil.rmtree(options.run_dir)
    queries = load_questions(options.data, options.n, options.offset)  # fail fast on bad data

    async def go() -> dict[str, Any]:
        async with open_context(
            settings,
            corpus=None,
            systems=("aisearch", "rag", "closed_book"),
            judge=True,
            collection=collection,
            index_dir=index_dir,
            judge_model=args.judge_model,
            judge_base_url=args.judge_base_url,
            search_index=True,
        ) as context:
            judge = CqedJudge(
                context.judge_model,
                context_tokens=options.judge_context_tokens,
                timeout_s=max(settings.role("writer").timeout_s, JUDGE_TIMEOUT_S),
            )
            return await run_cqed(options, context, judge, queries=queries, show_progress=not args.quiet)

    summary = asyncio.run(go())
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print((options.run_dir / "report.md").read_text(encoding="utf-8"))
        print(f"results: {options.run_dir}", file=sys.stderr)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Re-render a run's report (and plots) from its per-question records (a QA or a CQED run)."""
    from evals.cqed_report import write_report as write_cqed_report
    from evals.cqed_summary import RECORDS as CQED_RECORDS
    from evals.report import write_report
    from evals.run_records import RECORDS

    run_dir = _run_path(args.run)
    cqed = (run_dir / CQED_RECORDS).exists() and not (run_dir / RECORDS).exists()
    path = write_cqed_report(run_dir) if cqed else write_report(run_dir)
    print(path.read_text(encoding="utf-8"))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Two runs side by side."""
    from evals.run_compare import compare

    print(compare(_run_path(args.run_a), _run_path(args.run_b)))
    return 0


def cmd_judge(args: argparse.Namespace) -> int:
    """Give a run's answers the judge's verdicts afterwards; print the judge's part of the summary."""
    from core.settings import load_settings
    from evals.qa_context import build_judge
    from evals.rejudge import judge_run

    judge = build_judge(load_settings(args.config), args.judge_model, args.judge_base_url)
    summary = asyncio.run(judge_run(_run_path(args.run), judge, n=args.n, show_progress=not args.quiet))
    keys = [k for k in summary if k.startswith(("judge", "nwr_judge")) or k == "judged_later"]
    print(json.dumps({key: summary[key] for key in keys}, indent=2, default=str))
    return 0


def cmd_routes(args: argparse.Namespace) -> int:
    """Run only the Master's route decision over a question set; write and print its report."""
    import datetime

    from core.settings import load_settings
    from evals.qa_context import open_context
    from evals.qa_data import load_questions
    from evals.routing import markdown, route_questions, summarize
    from evals.run_dirs import RESULTS_DIR

    settings = load_settings()
    if args.routing:
        settings.routing = args.routing
    questions = load_questions(args.data, n=args.n)

    async def go() -> list[dict[str, Any]]:
        async with open_context(
            settings,
            corpus=Path(args.corpus) if args.corpus else None,
            systems=("aisearch",),
            judge=False,
            collection=args.collection,
            index_dir=Path(args.index_dir) if args.index_dir else None,
            show_progress=False,
        ) as context:
            return await route_questions(context.run, questions)

    records = asyncio.run(go())
    summary = summarize(records)
    words = ["aisearch", "eval", "routes", "--data", args.data]
    words += ["--corpus", args.corpus] if args.corpus else []
    words += ["--n", str(args.n)] if args.n else []
    words += ["--routing", settings.routing, "--out", args.out]
    header = [
        f"- **command**: `{shlex.join(words)}`",
        f"- **date**: {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}",
        f"- **routing**: {settings.routing}",
    ]
    text = markdown(summary, records, header)
    out = RESULTS_DIR / args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "routes.md").write_text(text, encoding="utf-8")
    (out / "routes.json").write_text(json.dumps({"summary": summary, "records": records}, indent=2), "utf-8")
    print(text)
    return 0


def _run_path(run: str) -> Path:
    """A run directory given by path, or by name under ``results/``."""
    from evals.run_dirs import RESULTS_DIR

    path = Path(run).expanduser()
    if not path.exists() and (RESULTS_DIR / run).exists():
        path = RESULTS_DIR / run
    if not (path / "questions.jsonl").exists() and not (path / "cqed.jsonl").exists():
        raise FileNotFoundError(f"no evaluation run at {path} (expected questions.jsonl or cqed.jsonl there)")
    return path


def _guard(command: Handler) -> Handler:
    """Turn the expected failures of an evaluation into one-line errors (exit code 2)."""
    return guarded(command, (DatasetError, FileNotFoundError, ValueError), code=2)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch eval qa``, ``eval cqed``, ``eval report`` and ``eval compare``."""
    group = command_group(subparsers, "eval", "evaluations", "eval_command")
    qa = group.add_parser(
        "qa",
        help="answer quality and latency: aisearch vs same-model RAG (and closed-book), side by side",
        description="Run questions through aisearch and a vanilla RAG baseline with the same model and "
        "index; score EM/F1/cover, supporting-title recall, citations, an LLM judge and NWR; write "
        "results/<run>/ (questions.jsonl, summary.json, report.md, plots). A stopped run resumes.",
    )
    qa.add_argument(
        "--data", required=True, help="questions JSONL (HotpotQA format, or evals/data/regression.jsonl)"
    )
    qa.add_argument("--corpus", help="corpus JSONL (title, text) to search; needed by rag and for aisearch")
    qa.add_argument("--n", type=int, help="number of questions")
    qa.add_argument("--offset", type=int, default=0, help="skip this many questions first")
    qa.add_argument("--seed", type=int, help="shuffle the questions with this seed before --offset/--n")
    qa.add_argument(
        "--split", choices=("tune", "held_out", "all"), default="all",
        help="the tuning part, the held-out part (a third, fixed by id hash) or all questions (default)",
    )  # fmt: skip
    qa.add_argument("--type", help="only questions of this type (the data's type field, e.g. comparison)")
    qa.add_argument("--systems", default="aisearch,rag", help="comma list of aisearch, rag, closed_book")
    qa.add_argument("--no-judge", action="store_true", help="skip the LLM judge (EM/F1 only)")
    qa.add_argument("--judge-model", help="judge model name (default: the writer's)")
    qa.add_argument(
        "--judge-base-url", help="OpenAI-compatible judge endpoint (key in AISEARCH_JUDGE_API_KEY)"
    )
    qa.add_argument("--concurrency", type=int, default=1, help="questions in flight at once (default 1)")
    qa.add_argument("--question-timeout", type=float, default=900.0, help="seconds per system per question")
    qa.add_argument("--run", help="run name under results (or a path); default from date and data")
    qa.add_argument("--fresh", action="store_true", help="start the run over instead of resuming it")
    qa.add_argument("--collection", default="hotpotqa", help="collection for the corpus (default hotpotqa)")
    qa.add_argument("--index-dir", help="index directory (default ~/.local/share/aisearch/eval-index)")
    qa.add_argument("--upload", action="store_true", help="upload to LangSmith when LANGSMITH_API_KEY is set")
    qa.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    qa.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    qa.set_defaults(func=_guard(cmd_qa))

    cqed = group.add_parser(
        "cqed",
        help="SRSA's contextual queries: aisearch vs same-model RAG and closed-book, SRSA's 0-5 judge",
        description="Answer each query with aisearch, same-model RAG and closed-book over the configured "
        "document index, then have SRSA's LLM judge rate the three answers, shown blind in a seeded "
        "order, 0-5 on informativeness, completeness, novelty and actionability; write "
        "results/<run>/ (cqed.jsonl, summary.json, report.md). A stopped run resumes.",
    )
    cqed.add_argument(
        "--data", required=True, help="CQED queries JSONL (id, query), e.g. ../shared/data/cqed/queries.jsonl"
    )
    cqed.add_argument("--n", type=int, help="number of queries")
    cqed.add_argument("--offset", type=int, default=0, help="skip this many queries first")
    cqed.add_argument(
        "--seed", type=int, default=0, help="seed of the blind order the judge sees (default 0)"
    )
    cqed.add_argument("--run", help="run name under results (or a path); default from date and data")
    cqed.add_argument("--fresh", action="store_true", help="start the run over instead of resuming it")
    cqed.add_argument("--index-dir", help="index directory (default: your document index)")
    cqed.add_argument("--collection", help="collection to search (default: your docsearch default, docs)")
    cqed.add_argument("--judge-model", help="judge model name (default: the writer's)")
    cqed.add_argument(
        "--judge-base-url", help="OpenAI-compatible judge endpoint (key in AISEARCH_JUDGE_API_KEY)"
    )
    cqed.add_argument(
        "--judge-context",
        type=int,
        help="the judge's context in tokens; SRSA's worked example goes in only when it fits "
        "(default: the local server's n_ctx)",
    )
    cqed.add_argument("--question-timeout", type=float, default=900.0, help="seconds per system per query")
    cqed.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    cqed.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    cqed.set_defaults(func=_guard(cmd_cqed))

    report = group.add_parser("report", help="re-render a run's report (and a QA run's plots)")
    report.add_argument("run", help="run directory or name under results")
    report.set_defaults(func=_guard(cmd_report))

    routes = group.add_parser(
        "routes", help="route accuracy: the Master's decisions only, what decided each, at what cost"
    )
    routes.add_argument(
        "--data",
        default=str(Path(__file__).resolve().parent.parent / "evals/data/regression.jsonl"),
        help="questions JSONL with expected_route or a HotpotQA type (default: the regression set)",
    )
    routes.add_argument("--corpus", help="corpus JSONL to search (default: the configured documents)")
    routes.add_argument("--n", type=int, help="number of questions")
    routes.add_argument("--routing", choices=("cheap", "llm"), help="override the configured routing")
    routes.add_argument("--collection", default="hotpotqa", help="collection for --corpus (default hotpotqa)")
    routes.add_argument("--index-dir", help="index directory for --corpus")
    routes.add_argument("--out", default="routes", help="results folder name under results")
    routes.set_defaults(func=_guard(cmd_routes))

    compare = group.add_parser("compare", help="two runs side by side (before/after a change)")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.set_defaults(func=_guard(cmd_compare))

    judge = group.add_parser(
        "judge",
        help="judge a finished run's answers afterwards (a run made with --no-judge)",
        description="Correctness, faithfulness and blind side-by-side verdicts for every answer of a run "
        "that has none, into judge.jsonl beside its records (resumable); then the summary and report, "
        "with the judge's agreement with exact match, are written again. Nothing is answered again.",
    )
    judge.add_argument("run", help="run directory or name under results")
    judge.add_argument("--n", type=int, help="judge only the run's first N questions")
    judge.add_argument("--judge-model", help="judge model name (default: the writer's)")
    judge.add_argument(
        "--judge-base-url", help="OpenAI-compatible judge endpoint (key in AISEARCH_JUDGE_API_KEY)"
    )
    judge.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    judge.set_defaults(func=_guard(cmd_judge))
