"""``aisearch eval qa | report | compare | routes``: answer quality against same-model RAG, its
reports, and the Master's route decisions alone."""

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


def _qa_command(args: argparse.Namespace) -> str:
    """The command line that reproduces (or resumes) this run."""
    words = ["aisearch", "eval", "qa", "--data", args.data]
    if args.corpus:
        words += ["--corpus", args.corpus]
    for flag in ("n", "offset", "seed", "concurrency"):
        value = getattr(args, flag)
        if value not in (None, 0, 1) or (flag == "n" and value is not None):
            words += [f"--{flag}", str(value)]
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
    from evals.qa_runner import RESULTS_DIR, QAOptions, default_run_dir, run_qa

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
        systems=systems,
        judge=not args.no_judge,
        concurrency=max(1, args.concurrency),
        question_timeout_s=args.question_timeout,
        upload=args.upload,
        command=_qa_command(args),
    )
    if args.run:
        run_dir = Path(args.run).expanduser() if "/" in args.run else RESULTS_DIR / args.run
    else:
        run_dir = default_run_dir(options)
    options.run_dir = run_dir
    if args.fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    questions = load_questions(options.data, options.n, options.offset, options.seed)  # fail fast on bad data
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


def cmd_report(args: argparse.Namespace) -> int:
    """Re-render a run's report (and plots) from its per-question records."""
    from evals.report import write_report

    path = write_report(_run_path(args.run))
    print(path.read_text(encoding="utf-8"))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Two runs side by side."""
    from evals.report import compare

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
    from evals.qa_runner import RESULTS_DIR
    from evals.routing import markdown, route_questions, summarize

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
    """A run directory given by path, or by name under ``evals/results``."""
    from evals.qa_runner import RESULTS_DIR

    path = Path(run).expanduser()
    if not path.exists() and (RESULTS_DIR / run).exists():
        path = RESULTS_DIR / run
    if not (path / "questions.jsonl").exists():
        raise FileNotFoundError(f"no evaluation run at {path} (expected questions.jsonl there)")
    return path


def _guard(command: Handler) -> Handler:
    """Turn the expected failures of an evaluation into one-line errors (exit code 2)."""
    return guarded(command, (DatasetError, FileNotFoundError, ValueError), code=2)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``aisearch eval qa``, ``eval report`` and ``eval compare``."""
    group = command_group(subparsers, "eval", "evaluations", "eval_command")
    qa = group.add_parser(
        "qa",
        help="answer quality and latency: aisearch vs same-model RAG (and closed-book), side by side",
        description="Run questions through aisearch and a vanilla RAG baseline with the same model and "
        "index; score EM/F1/cover, supporting-title recall, citations, an LLM judge and NWR; write "
        "evals/results/<run>/ (questions.jsonl, summary.json, report.md, plots). A stopped run resumes.",
    )
    qa.add_argument(
        "--data", required=True, help="questions JSONL (HotpotQA format, or evals/data/regression.jsonl)"
    )
    qa.add_argument("--corpus", help="corpus JSONL (title, text) to search; needed by rag and for aisearch")
    qa.add_argument("--n", type=int, help="number of questions")
    qa.add_argument("--offset", type=int, default=0, help="skip this many questions first")
    qa.add_argument("--seed", type=int, help="shuffle the questions with this seed before --offset/--n")
    qa.add_argument("--systems", default="aisearch,rag", help="comma list of aisearch, rag, closed_book")
    qa.add_argument("--no-judge", action="store_true", help="skip the LLM judge (EM/F1 only)")
    qa.add_argument("--judge-model", help="judge model name (default: the writer's)")
    qa.add_argument(
        "--judge-base-url", help="OpenAI-compatible judge endpoint (key in AISEARCH_JUDGE_API_KEY)"
    )
    qa.add_argument("--concurrency", type=int, default=1, help="questions in flight at once (default 1)")
    qa.add_argument("--question-timeout", type=float, default=900.0, help="seconds per system per question")
    qa.add_argument("--run", help="run name under evals/results (or a path); default from date and data")
    qa.add_argument("--fresh", action="store_true", help="start the run over instead of resuming it")
    qa.add_argument("--collection", default="hotpotqa", help="collection for the corpus (default hotpotqa)")
    qa.add_argument("--index-dir", help="index directory (default ~/.local/share/aisearch/eval-index)")
    qa.add_argument("--upload", action="store_true", help="upload to LangSmith when LANGSMITH_API_KEY is set")
    qa.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    qa.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    qa.set_defaults(func=_guard(cmd_qa))

    report = group.add_parser("report", help="re-render a run's report and plots")
    report.add_argument("run", help="run directory or name under evals/results")
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
    routes.add_argument("--out", default="routes", help="results folder name under evals/results")
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
    judge.add_argument("run", help="run directory or name under evals/results")
    judge.add_argument("--n", type=int, help="judge only the run's first N questions")
    judge.add_argument("--judge-model", help="judge model name (default: the writer's)")
    judge.add_argument(
        "--judge-base-url", help="OpenAI-compatible judge endpoint (key in AISEARCH_JUDGE_API_KEY)"
    )
    judge.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    judge.set_defaults(func=_guard(cmd_judge))
