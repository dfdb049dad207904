"""``aisearch eval bfcl``: how well a configured model role calls tools, on BFCL's single-turn tasks."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shlex
import shutil
from pathlib import Path
from typing import Any

from app.commands import Handler, command_group, echo, guarded
from evals.bfcl_data import DEFAULT_CATEGORIES, SPLITS, TOOL_DOCS, is_relevance
from evals.bfcl_fetch import BfclDataError
from evals.bfcl_run import MODES, SCHEMA_MODE
from models.config import ROLES, ConfigError

log = logging.getLogger(__name__)


def _command(args: argparse.Namespace, categories: tuple[str, ...]) -> str:
    """The command line that reproduces (or resumes) this run."""
    words = ["aisearch", "eval", "bfcl", "--role", args.role, "--split", args.split]
    words += ["--mode", args.mode] if args.mode != "fc" else []
    words += ["--tool-docs", args.tool_docs] if args.tool_docs != "original" else []
    words += ["--margins"] if args.margins else []
    words += (
        ["--decline-threshold", str(args.decline_threshold)] if args.decline_threshold is not None else []
    )
    for category in categories if categories != DEFAULT_CATEGORIES else ():
        words += ["--category", category]
    for flag in ("model", "base_url", "repeat_penalty", "n", "data_dir", "run"):
        if getattr(args, flag) is not None:
            words += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    return shlex.join(words)


def cmd_bfcl(args: argparse.Namespace) -> int:
    """Run the chosen BFCL categories through one role's model and print the report."""
    from evals.bfcl_data import load_tasks, with_refined_documents
    from evals.bfcl_fetch import data_dir, ensure_bfcl
    from evals.bfcl_run import BfclOptions, default_run_dir, run_bfcl
    from evals.bfcl_score import Scorer
    from evals.run_dirs import named_run_dir
    from models.config import load_model_settings
    from models.factory import build_chat_model

    categories = tuple(dict.fromkeys(args.category or DEFAULT_CATEGORIES))
    if args.n is not None and args.n < 1:
        raise ValueError("--n takes a positive number of tasks per category")
    if (args.margins or args.decline_threshold is not None) and args.mode != SCHEMA_MODE:
        flag = "--margins" if args.margins else "--decline-threshold"
        raise ValueError(
            f"{flag} reads the deciding token of the {SCHEMA_MODE} mode; add --mode {SCHEMA_MODE}"
        )
    needs_checker = not all(is_relevance(c) for c in categories)
    root = ensure_bfcl() if args.data_dir is None or needs_checker else None  # fail fast, before the model
    data = Path(args.data_dir).expanduser() if args.data_dir else data_dir(root or ensure_bfcl())
    tasks = load_tasks(data, categories, args.split, args.n)
    if not tasks:
        raise BfclDataError(f"no tasks in split {args.split!r} of {', '.join(categories)}")
    refined_documents: dict[str, str] = {}
    stale: list[str] = []
    if args.tool_docs == "refined":
        tasks, shown = with_refined_documents(tasks)
        refined_documents, stale = shown.refined, shown.stale
        if not refined_documents:
            raise ValueError(
                "--tool-docs refined: no stored refinement was made from these tasks' function documents"
                + (f" ({', '.join(stale)} started from another original)" if stale else "")
                + "; run `aisearch tools refine SERVER` first"
            )

    settings = load_model_settings(args.config)
    given = (("model", args.model), ("base_url", args.base_url), ("repeat_penalty", args.repeat_penalty))
    overrides = {k: v for k, v in given if v}
    if overrides:
        settings.roles[args.role] = settings.role(args.role).model_copy(update=overrides)
    role = settings.role(args.role)
    options = BfclOptions(
        role=args.role,
        model=role.model,
        base_url=role.base_url,
        categories=categories,
        split=args.split,
        mode=args.mode,
        n=args.n,
        tool_docs=args.tool_docs,
        refined_documents=refined_documents,
        stale_refinements=stale,
        timeout_s=args.timeout or role.timeout_s,
        margins=args.margins or args.decline_threshold is not None,
        decline_threshold=args.decline_threshold,
        repeat_penalty=role.sent_repeat_penalty,
        command=_command(args, categories),
    )
    if args.data_dir:
        options.data = str(data.resolve())
    options.run_dir = named_run_dir(args.run) if args.run else default_run_dir(options)
    if args.fresh and options.run_dir.exists():
        shutil.rmtree(options.run_dir)
    model = build_chat_model(args.role, settings)

    async def go() -> dict[str, Any]:
        return await run_bfcl(options, model, tasks, Scorer(root), show_progress=not args.quiet)

    summary = asyncio.run(go())
    if args.json:
        echo(json.dumps(summary, indent=2, default=str))
    else:
        echo((options.run_dir / "report.md").read_text(encoding="utf-8").rstrip())
        echo(f"results: {options.run_dir}", err=True)
    return 0


def guard_bfcl(command: Handler) -> Handler:
    """The expected failures (no data, a bad option, no model endpoint) as one-line errors, exit 2."""
    from models.errors import LocalServerError
    from models.factory import ModelUnavailableError

    errors = (
        BfclDataError,
        ConfigError,
        ValueError,
        FileNotFoundError,
        ModelUnavailableError,
        LocalServerError,
    )
    return guarded(command, errors, code=2)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch eval bfcl``."""
    group = command_group(subparsers, "eval", "evaluations", "eval_command")
    bfcl = group.add_parser(
        "bfcl",
        help="tool-call accuracy and per-step latency of a model role on BFCL's single-turn tasks",
        description="Give one role's model (the executor by default) each BFCL task's functions as "
        "OpenAI tools, read its tool calls (or the calls it wrote as text) and score them with BFCL's "
        "own AST checker (irrelevance: right only without a call). Every category is split by a "
        "salted hash of the task id into train/dev/test (60/20/20); tune on train/dev only. BFCL "
        "(bfcl-eval on PyPI, pinned) is fetched once into ~/.cache/aisearch/bfcl. Writes "
        "results/<run>/ (bfcl.jsonl, summary.json, report.md); a stopped run resumes.",
    )
    bfcl.add_argument("--role", choices=ROLES, default="executor", help="the role whose model is measured")
    bfcl.add_argument("--model", help="the model name (default: the role's configured model)")
    bfcl.add_argument(
        "--base-url",
        help="an OpenAI-compatible endpoint (default: the role's; key in AISEARCH_<ROLE>_API_KEY)",
    )
    bfcl.add_argument(
        "--category",
        action="append",
        help="a single-turn BFCL category, repeatable (default: " + ", ".join(DEFAULT_CATEGORIES) + ")",
    )
    bfcl.add_argument(
        "--split", choices=SPLITS, default="test", help="which part of each category (default test)"
    )
    bfcl.add_argument(
        "--mode",
        choices=MODES,
        default="fc",
        help="fc: the functions as OpenAI tools (default); prompt: BFCL's prompting mode, the functions "
        "in the system prompt and the calls written as [f(a=1)]; thought / nothought: the distilled "
        "executor's JSON prompts (a thought then the calls, or the calls only); schema: nothought's "
        "prompt with the reply constrained to the task's functions by a JSON schema",
    )
    bfcl.add_argument("--n", type=int, help="the first N tasks of each category in the split (default all)")
    bfcl.add_argument("--timeout", type=float, help="seconds per task (default: the role's timeout)")
    bfcl.add_argument(
        "--data-dir",
        help="a folder of BFCL-format files to read instead of the pinned release (the bundled tools' "
        "task set: evals/data/bundled_tools)",
    )
    bfcl.add_argument(
        "--tool-docs",
        choices=TOOL_DOCS,
        default="original",
        help="original: the functions' own descriptions (default); refined: the document DRAFT refined "
        "from a function's description where one is stored (`aisearch tools refine SERVER`), for "
        "functions named like the refined tools (server.tool)",
    )
    bfcl.add_argument(
        "--margins",
        action="store_true",
        help="schema mode: ask for log-probabilities and record each reply's decline margin (how "
        "strongly the model leans to calling nothing) and their AUC, irrelevance against the rest",
    )
    bfcl.add_argument(
        "--decline-threshold",
        type=float,
        metavar="MARGIN",
        help="schema mode: let the decline margin decide (above MARGIN: call nothing; otherwise call, "
        "asking again with a call required when the reply declined); implies --margins. Choose it on "
        "a tuning split (the summary's best_threshold) and apply it to another",
    )
    bfcl.add_argument(
        "--repeat-penalty",
        type=float,
        metavar="P",
        help="the local server's repeat penalty for this run (default: the role's; 1.0 is none)",
    )
    bfcl.add_argument("--run", help="run name under results (or a path); default from date, role, model")
    bfcl.add_argument("--fresh", action="store_true", help="start the run over instead of resuming it")
    bfcl.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    bfcl.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    bfcl.set_defaults(func=guard_bfcl(cmd_bfcl))
