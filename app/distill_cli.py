"""``aisearch distill synthesize|curate|train|export``: the distilled executor, step by step
(TURA §4.3); ``reader-examples`` and ``calibrate`` live beside it (``distill_reader_cli.py``,
``distill_calibrate_cli.py``).

Every step reads and writes under ``~/.cache/aisearch/distill`` (``AISEARCH_DISTILL_DIR``), shows a
progress bar and resumes where a stopped run stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from app.bfcl_cli import guard_bfcl
from app.commands import echo
from app.distill_calibrate_cli import register_calibrate
from app.distill_reader_cli import register_reader
from distill.export import DEFAULT_QTYPE, QTYPES
from distill.train import TrainOptions
from evals.bfcl_fetch import BfclDataError

log = logging.getLogger(__name__)

STUDENT = "qwen2.5-coder-0.5b-instruct"  # the bundled executor, the student
MAX_REFERENCE_REPEAT = 20  # a category written more often than this is most of the mix


def _train_tasks(categories: list[str] | None, n: int | None) -> tuple[Any, list[Any]]:
    """BFCL's checker root and the training split's tasks (the first ``n`` of each category; by
    default BFCL's five categories and the bundled-tool ones, ``distill/tasks.py``)."""
    from distill.tasks import load_mix
    from evals.bfcl_fetch import data_dir, ensure_bfcl

    if n is not None and n < 1:
        raise ValueError("--n takes a positive number of tasks per category")
    root = ensure_bfcl()
    tasks = load_mix(data_dir(root), categories, n=n)
    if not tasks:
        raise BfclDataError("no training tasks in the chosen categories")
    return root, tasks


def _tasks_of(root: Path, records: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    """The training tasks of every category ``records`` (read from ``path``) name, by id."""
    from distill.tasks import load_mix
    from evals.bfcl_fetch import data_dir

    categories = list(dict.fromkeys(str(item.get("category", "")) for item in records))
    if "" in categories:
        raise BfclDataError(f"a record in {path} names no category")
    return {t.id: t for t in load_mix(data_dir(root), categories)} if categories else {}


def cmd_synthesize(args: argparse.Namespace) -> int:
    """Teacher trajectories for the training tasks, appended to ``trajectories.jsonl``."""
    from distill.paths import TRAJECTORIES, distill_dir
    from distill.synthesize import SynthesisOptions, synthesize
    from models.config import load_model_settings
    from models.factory import build_chat_model

    if args.samples < 1:
        raise ValueError("--samples takes a positive number")
    _, tasks = _train_tasks(args.category, args.n)
    settings = load_model_settings(args.config)
    overrides = {k: v for k, v in (("model", args.teacher_model), ("base_url", args.base_url)) if v}
    settings.roles["executor"] = settings.role("executor").model_copy(update=overrides)
    role = settings.role("executor")
    model = build_chat_model("executor", settings)
    options = SynthesisOptions(args.samples, args.temperature, args.timeout or role.timeout_s, args.schema)
    out = distill_dir() / TRAJECTORIES
    written = asyncio.run(
        synthesize(model, tasks, out, options, teacher=role.model, show_progress=not args.quiet)
    )
    echo(json.dumps({"trajectories": str(out), "written_now": written, "tasks": len(tasks)}))
    return 0


def cmd_curate(args: argparse.Namespace) -> int:
    """Judge the trajectories; write ``curated.jsonl`` and the counts at each stage."""
    from distill.curate import curate
    from distill.paths import CURATED, CURATION_REPORT, TRAJECTORIES, distill_dir
    from distill.tasks import CONTRAST, default_categories
    from evals.bfcl_fetch import ensure_bfcl
    from evals.bfcl_score import Scorer
    from evals.run_records import load_records

    if args.per_task < 1:
        raise ValueError("--per-task takes a positive number")
    if args.contrast and not args.references:
        raise ValueError("--contrast adds reference declines: add --references")
    if args.reference_limit and not args.references:
        raise ValueError("--reference-limit caps reference trajectories: add --references")
    if args.reference_repeat and not args.references:
        raise ValueError("--reference-repeat repeats reference trajectories: add --references")
    root = ensure_bfcl()
    work = distill_dir()
    trajectories = work / TRAJECTORIES
    if args.references:
        # Every training task can be a target: synthesis is optional, its trajectories preferred.
        _, mix = _train_tasks([*default_categories(), CONTRAST] if args.contrast else None, None)
        tasks = {t.id: t for t in mix}
    else:  # a missing file: no tasks here, and curate says so
        tasks = _tasks_of(root, load_records(trajectories), trajectories)
    categories = {t.category for t in tasks.values()}
    limits = parse_category_counts("--reference-limit", args.reference_limit, categories)
    repeats = parse_category_counts(
        "--reference-repeat", args.reference_repeat, categories, least=1, most=MAX_REFERENCE_REPEAT
    )
    counts = curate(
        trajectories,
        tasks,
        Scorer(root),
        work / CURATED,
        args.per_task,
        references=args.references,
        reference_limits=limits,
        reference_repeats=repeats,
    )
    (work / CURATION_REPORT).write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    echo(json.dumps(counts, indent=2))
    return 0


def parse_category_counts(
    option: str, given: list[str] | None, categories: set[str], least: int = 0, most: int | None = None
) -> dict[str, int]:
    """``CATEGORY=N`` values of ``option`` as a mapping, each category one of ``categories``.

    Raises:
        ValueError: On a malformed value, an N outside ``least``..``most`` or a category with no
            training task.
    """
    counts: dict[str, int] = {}
    for value in given or []:
        category, _, number = value.partition("=")
        within = number.strip().isdigit() and int(number) >= least and (most is None or int(number) <= most)
        if not within:
            span = f"from {least} to {most}" if most is not None else f"≥ {least}"
            raise ValueError(f"{option} takes CATEGORY=N with N a whole number {span}, not {value!r}")
        if category not in categories:
            known = ", ".join(sorted(categories))
            raise ValueError(f"{option}: no training category {category!r} (known: {known})")
        counts[category] = int(number)
    return counts


def _curated_examples(work: Path) -> list[Any]:
    """The mixed-rationale examples of every curated trajectory."""
    from distill.examples import examples_for
    from distill.paths import CURATED
    from evals.bfcl_fetch import ensure_bfcl
    from evals.run_records import load_records

    path = work / CURATED
    if not path.is_file():
        raise FileNotFoundError(f"no curated trajectories at {path}: run `aisearch distill curate` first")
    records = load_records(path)
    tasks = _tasks_of(ensure_bfcl(), records, path)
    items = [item for item in records if item["task_id"] in tasks]
    return [example for item in items for example in examples_for(item, tasks[item["task_id"]])]


def cmd_train(args: argparse.Namespace) -> int:
    """LoRA SFT of the student on the curated examples, within the stated budget."""
    from distill.examples import encode
    from distill.paths import TRAIN_DIR, distill_dir
    from distill.reader import read_examples
    from distill.student import load_student
    from distill.train import train
    from models.assemble import assemble

    options = TrainOptions(
        max_steps=args.max_steps,
        max_minutes=args.max_minutes,
        learning_rate=args.learning_rate,
        schedule=args.schedule,
        rank=args.rank,
        layers=args.layers,
        max_tokens=args.max_tokens,
        keep_every=args.keep_every,
        weights=args.weights,
    )
    if options.max_steps < 1 or options.max_minutes <= 0 or options.layers < 1:
        raise ValueError("--max-steps, --max-minutes and --layers take positive numbers")
    if options.keep_every < 0:
        raise ValueError("--keep-every takes a number of steps, or 0 to keep no snapshot")
    work = distill_dir()
    examples = read_examples(Path(args.examples).expanduser()) if args.examples else _curated_examples(work)
    model, tokenizer = load_student(Path(args.student).expanduser() if args.student else assemble(STUDENT))
    encoded = [e for e in (encode(tokenizer, x, options.max_tokens) for x in examples) if e is not None]
    log.info("%d of %d examples fit in %d tokens", len(encoded), len(examples), options.max_tokens)
    budget = train(model, encoded, work / TRAIN_DIR, options, show_progress=not args.quiet)
    echo(json.dumps({**budget, "out": str(work / TRAIN_DIR)}, indent=2))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Merge the adapter into the student's GGUF and write the distilled executor."""
    from distill.export import export
    from distill.paths import TRAIN_DIR, distill_dir, distilled_gguf
    from distill.train import ADAPTER, snapshot_dir, snapshot_steps
    from models.assemble import assemble

    train_dir = distill_dir() / TRAIN_DIR
    adapters = [train_dir / ADAPTER]
    if args.snapshot:
        kept = snapshot_steps(train_dir)
        missing = sorted(set(args.snapshot) - set(kept))
        if missing:
            listed = ", ".join(map(str, kept)) or "none (train with --keep-every)"
            steps = ", ".join(map(str, missing))
            raise ValueError(f"no snapshot at step {steps} in {train_dir} (kept: {listed})")
        adapters = [snapshot_dir(train_dir, step) for step in sorted(set(args.snapshot))]
    base = Path(args.student).expanduser() if args.student else assemble(STUDENT)
    out = Path(args.out).expanduser() if args.out else distilled_gguf()
    manifest = export(base, adapters, out, args.qtype, args.scale)
    echo(json.dumps(manifest, indent=2))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch distill`` and its steps (synthesize, curate, reader-examples, train, export,
    calibrate), in the order a run takes them."""
    distill = subparsers.add_parser(
        "distill",
        help="distil the executor: teacher trajectories, curation, LoRA training, GGUF export",
        description="TURA's distilled executor (§4.3) on the training split of BFCL and of the "
        "bundled-tool tasks. Work goes to "
        "~/.cache/aisearch/distill (AISEARCH_DISTILL_DIR); every step resumes.",
    )
    steps = distill.add_subparsers(dest="distill_command", required=True)

    synth = steps.add_parser("synthesize", help="the teacher writes a thought and the calls per task")
    synth.add_argument("--teacher-model", default="qwen2.5-coder-1.5b-instruct", help="the teacher model")
    synth.add_argument("--base-url", help="an OpenAI-compatible endpoint for the teacher (default: local)")
    synth.add_argument(
        "--category",
        action="append",
        help="a BFCL or bundled-tool category, repeatable (default: BFCL's five and the bundled ones)",
    )
    synth.add_argument("--n", type=int, help="the first N training tasks of each category (default all)")
    synth.add_argument("--samples", type=int, default=3, help="samples per task (default 3)")
    synth.add_argument("--temperature", type=float, default=0.8, help="of every sample but the first")
    synth.add_argument("--timeout", type=float, help="seconds per sample (default: the role's timeout)")
    synth.add_argument(
        "--schema",
        action="store_true",
        help="constrain each reply to the task's functions by a JSON schema (llama.cpp servers)",
    )
    synth.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    synth.set_defaults(func=guard_bfcl(cmd_synthesize))

    cur = steps.add_parser("curate", help="keep the trajectories the correctness and efficiency judges pass")
    cur.add_argument("--per-task", type=int, default=1, help="distinct call sets kept per task (default 1)")
    cur.add_argument(
        "--references",
        action="store_true",
        help="every training task without a kept trajectory gets its reference call as target (no"
        " thought); needs no synthesis",
    )
    cur.add_argument(
        "--contrast",
        action="store_true",
        help="with --references, also decline each simple_python training question paired with an"
        " unrelated function (category contrast_irrelevance), meant to make the student look at the function",
    )
    cur.add_argument(
        "--reference-limit",
        action="append",
        metavar="CATEGORY=N",
        help="at most N reference trajectories of CATEGORY (repeatable), to balance declining, single"
        " and parallel calls",
    )
    cur.add_argument(
        "--reference-repeat",
        action="append",
        metavar="CATEGORY=N",
        help="write each reference trajectory of CATEGORY N times (repeatable), to weight up a"
        " category the student gets wrong most",
    )
    cur.set_defaults(func=guard_bfcl(cmd_curate))

    register_reader(steps)

    tr = steps.add_parser("train", help="LoRA SFT of the 0.5B student on the curated trajectories")
    default = TrainOptions()  # the run's defaults live in one place
    tr.add_argument("--student", help="the student's GGUF file (default: the bundled 0.5B executor)")
    tr.add_argument(
        "--examples",
        help="train on these examples (`distill reader-examples`) instead of the curated trajectories",
    )
    tr.add_argument(
        "--max-steps",
        type=int,
        default=default.max_steps,
        help=f"examples trained on, at most (default {default.max_steps})",
    )
    tr.add_argument(
        "--max-minutes",
        type=float,
        default=default.max_minutes,
        help=f"wall-clock budget (default {default.max_minutes:g})",
    )
    tr.add_argument("--learning-rate", type=float, default=default.learning_rate, help="AdamW learning rate")
    tr.add_argument(
        "--schedule",
        choices=("linear", "constant"),
        default=default.schedule,
        help="linear: a short warm-up, then down to 0 at --max-steps; constant: the rate throughout"
        f" (default {default.schedule})",
    )
    tr.add_argument("--rank", type=int, default=default.rank, help=f"LoRA rank (default {default.rank})")
    tr.add_argument(
        "--layers",
        type=int,
        default=default.layers,
        help=f"LoRA on the last N layers (default {default.layers})",
    )
    tr.add_argument("--max-tokens", type=int, default=default.max_tokens, help="longer examples are left out")
    tr.add_argument(
        "--keep-every",
        type=int,
        default=default.keep_every,
        help="keep the adapter every N steps as a snapshot, for `export --snapshot`"
        f" (default {default.keep_every}; 0: none)",
    )
    tr.add_argument(
        "--weights",
        choices=("auto", "float32", "bfloat16"),
        default=default.weights,
        help="the frozen base's dtype; auto: bfloat16 where the CPU or GPU computes it natively, else"
        " float32 (the adapters are float32 either way)",
    )
    tr.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    tr.set_defaults(func=guard_bfcl(cmd_train))

    ex = steps.add_parser("export", help="merge the adapter and write the distilled executor's GGUF")
    ex.add_argument("--student", help="the student's GGUF file (default: the bundled 0.5B executor)")
    ex.add_argument("--out", help="the GGUF file to write (default: where the executor finds it)")
    ex.add_argument(
        "--qtype",
        choices=QTYPES,
        default=DEFAULT_QTYPE,
        help=f"of the merged tensors (default {DEFAULT_QTYPE}, which keeps the trained update; base: the "
        "student file's own quantization through llama.cpp's quantizer, faster to read but it erodes the update)",
    )
    ex.add_argument(
        "--snapshot",
        type=int,
        nargs="+",
        metavar="STEP",
        help="the adapter as kept at this step (`train --keep-every`) instead of the last one; several "
        "steps merge as their average update (checkpoint averaging)",
    )
    ex.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="the adapter's update times this, in (0, 1]: below 1 mixes the student back towards its base "
        "(WiSE-FT; default 1, as trained)",
    )
    ex.set_defaults(func=guard_bfcl(cmd_export))

    register_calibrate(steps)
