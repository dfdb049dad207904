"""``aisearch distill calibrate``: the exported student's decline threshold, chosen on a tuning
split of BFCL and kept in its manifest (``distill/calibrate.py``)."""

from __future__ import annotations

import argparse
import asyncio
import json

from app.bfcl_cli import guard_bfcl
from app.commands import echo
from evals.bfcl_fetch import BfclDataError


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Choose the exported student's decline threshold on a tuning split and store it in its manifest."""
    import shlex
    import shutil

    from distill.calibrate import calibrate
    from distill.paths import distill_dir
    from evals.bfcl_data import DEFAULT_CATEGORIES, load_tasks
    from evals.bfcl_fetch import data_dir, ensure_bfcl
    from evals.bfcl_run import SCHEMA_MODE, BfclOptions
    from evals.bfcl_score import Scorer
    from models.config import load_model_settings
    from models.distilled import DISTILLED_ALIAS, distilled_available, distilled_gguf
    from models.factory import build_chat_model

    if args.n is not None and args.n < 1:
        raise ValueError("--n takes a positive number of tasks per category")
    if not distilled_available():
        raise FileNotFoundError(
            f"no exported student at {distilled_gguf()}: run `aisearch distill export` first"
        )
    root = ensure_bfcl()
    tasks = load_tasks(data_dir(root), DEFAULT_CATEGORIES, args.split, args.n)
    if not tasks:
        raise BfclDataError(f"no tasks in split {args.split!r}")
    settings = load_model_settings(args.config)
    settings.roles["executor"] = settings.role("executor").model_copy(update={"model": DISTILLED_ALIAS})
    role = settings.role("executor")
    words = ["aisearch", "distill", "calibrate", "--split", args.split]
    words += ["--n", str(args.n)] if args.n else []
    run_dir = distill_dir() / "eval" / f"calibrate-{args.split}-n{args.n or 'all'}"
    if args.fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    options = BfclOptions(
        role="executor",
        model=DISTILLED_ALIAS,
        base_url=role.base_url,
        split=args.split,
        mode=SCHEMA_MODE,
        n=args.n,
        timeout_s=args.timeout or role.timeout_s,
        margins=True,
        repeat_penalty=role.sent_repeat_penalty,
        run_dir=run_dir,
        command=shlex.join(words),
    )
    model = build_chat_model("executor", settings)
    calibration = asyncio.run(
        calibrate(distilled_gguf(), model, tasks, Scorer(root), options, show_progress=not args.quiet)
    )
    echo(json.dumps(calibration.model_dump(), indent=2))
    return 0


def register_calibrate(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch distill calibrate`` to the distill steps."""
    cal = steps.add_parser(
        "calibrate",
        help="choose the exported student's decline threshold on a tuning split, kept in its manifest",
        description="Run the exported student on BFCL's five categories (a tuning split) with the reply "
        "constrained by a JSON schema and each step's decline margin recorded, choose the margin above "
        "which it should call nothing (the threshold that scores that run best), and store it in the "
        "export's manifest for `aisearch eval executor --schema` (distilled_calibrated). The run goes "
        "to <distill dir>/eval/calibrate-<split>-n<N> and resumes.",
    )
    cal.add_argument(
        "--split", choices=("train", "dev"), default="dev", help="the tuning split (default dev)"
    )
    cal.add_argument("--n", type=int, help="the first N tasks of each category (default all)")
    cal.add_argument("--timeout", type=float, help="seconds per step (default: the executor's)")
    cal.add_argument("--fresh", action="store_true", help="start the calibration run over")
    cal.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    cal.set_defaults(func=guard_bfcl(cmd_calibrate))
