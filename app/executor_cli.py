"""``aisearch eval executor``: base, teacher and distilled executors on BFCL, as one JSON object."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shlex

from app.bfcl_cli import guard_bfcl
from app.commands import command_group, echo
from evals.bfcl_data import DEFAULT_CATEGORIES, SPLITS, is_relevance
from evals.bfcl_fetch import BfclDataError

log = logging.getLogger(__name__)


def cmd_executor(args: argparse.Namespace) -> int:
    """Evaluate every available executor on the chosen BFCL tasks and print the contract."""
    from distill.calibrate import read_calibration
    from distill.tasks import load_mix
    from evals.bfcl_fetch import data_dir, ensure_bfcl
    from evals.bfcl_run import BfclOptions
    from evals.bfcl_score import Scorer
    from evals.executor_eval import evaluate_executors, executors_for
    from models.config import load_model_settings
    from models.distilled import DISTILLED_ALIAS, distill_dir, distilled_available, distilled_gguf

    categories = tuple(dict.fromkeys(args.category or DEFAULT_CATEGORIES))
    if args.n is not None and args.n < 1:
        raise ValueError("--n takes a positive number of tasks per category")
    needs_checker = not all(is_relevance(c) for c in categories)
    root = ensure_bfcl()
    tasks = load_mix(data_dir(root), categories, args.split, args.n)
    if not tasks:
        raise BfclDataError(f"no tasks in split {args.split!r} of {', '.join(categories)}")
    settings = load_model_settings(args.config)
    words = ["aisearch", "eval", "executor", "--split", args.split]
    words += [w for c in categories if categories != DEFAULT_CATEGORIES for w in ("--category", c)]
    words += ["--n", str(args.n)] if args.n else []
    words += ["--schema"] if args.schema else []
    options = BfclOptions(
        categories=categories,
        split=args.split,
        n=args.n,
        timeout_s=args.timeout or settings.role("executor").timeout_s,
        command=shlex.join(words),
    )
    suffix = "" if categories == DEFAULT_CATEGORIES else "-" + "+".join(categories)
    runs = distill_dir() / "eval" / f"{args.split}-n{args.n or 'all'}{suffix}"
    executors = executors_for(args.schema)
    distilled = distilled_available()
    available = {e.name: distilled for e in executors if e.model == DISTILLED_ALIAS}
    calibration = read_calibration(distilled_gguf()) if distilled and args.schema else None
    if calibration and calibration.split == args.split:
        log.warning(
            "the decline threshold was chosen on the %s split: distilled_calibrated is fitted there",
            args.split,
        )
    scorer = Scorer(root if needs_checker else None)
    result = asyncio.run(
        evaluate_executors(
            tasks,
            scorer,
            settings,
            runs,
            options,
            available,
            executors=executors,
            decline_threshold=calibration.decline_threshold if calibration else None,
            show_progress=not args.quiet,
        )
    )
    if calibration:
        result["calibration"] = calibration.model_dump(include={"decline_threshold", "split", "n", "auc"})
    result["runs"] = str(runs)
    echo(json.dumps(result, indent=None if args.json else 2))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch eval executor``."""
    group = command_group(subparsers, "eval", "evaluations", "eval_command")
    executor = group.add_parser(
        "executor",
        help="base, teacher and distilled executors on BFCL: accuracy and P80 per step, one JSON",
        description="Run the base 0.5B and the 1.5B teacher (BFCL's prompting mode) and, when it is "
        "exported, the distilled 0.5B with and without a thought, on the same BFCL tasks, and print "
        "n, <executor>_acc, <executor>_p80_ms and by_category (null: executor not available). Runs "
        "resume from ~/.cache/aisearch/distill/eval/.",
    )
    executor.add_argument(
        "--category",
        action="append",
        help="a single-turn BFCL category or a bundled-tool one (bundled_...), repeatable (default: "
        + ", ".join(DEFAULT_CATEGORIES)
        + ")",
    )
    executor.add_argument("--split", choices=SPLITS, default="test", help="default test")
    executor.add_argument("--n", type=int, help="the first N tasks of each category (default all)")
    executor.add_argument("--timeout", type=float, help="seconds per step (default: the executor's)")
    executor.add_argument(
        "--schema",
        action="store_true",
        help="also base_schema, teacher_schema and distilled_schema: the calls only, constrained by "
        "a JSON schema of the task's functions (how the graph's executor asks); and "
        "distilled_calibrated, with the decline threshold `aisearch distill calibrate` stored",
    )
    executor.add_argument("--json", action="store_true", help="one line of JSON (default: indented)")
    executor.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    executor.set_defaults(func=guard_bfcl(cmd_executor))
