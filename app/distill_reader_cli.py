"""``aisearch distill reader-examples``: the hop reader's training examples from QA runs' chains
(``distill/reader.py``), for ``aisearch distill train --examples``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.commands import echo, guarded

READER_EXAMPLES = "reader.jsonl"  # under the distill folder, unless --out says otherwise


def cmd_reader_examples(args: argparse.Namespace) -> int:
    """Write the labelled hops of the runs' tuning questions as training examples."""
    from distill.paths import distill_dir
    from distill.reader import reader_examples, write_examples
    from evals.run_records import RECORDS, load_records

    records = []
    for run in args.runs:
        path = Path(run).expanduser()
        path = path / RECORDS if path.is_dir() else path
        if not path.is_file():
            raise FileNotFoundError(
                f"no QA run records at {path} (an `aisearch eval qa` run folder or its {RECORDS})"
            )
        records += load_records(path)
    examples, counts = reader_examples(records)
    out = Path(args.out).expanduser() if args.out else distill_dir() / READER_EXAMPLES
    write_examples(examples, out)
    echo(
        json.dumps({"records": len(records), "examples": len(examples), **counts, "out": str(out)}, indent=2)
    )
    return 0


def register_reader(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aisearch distill reader-examples`` to the distill steps."""
    reader = steps.add_parser(
        "reader-examples",
        help="the hop reader's training examples from QA runs' chains (tuning questions only)",
        description="Each hop of the runs' aisearch chains becomes the prompt its reader saw and the"
        " reply it should have given: a last hop, the gold answer its passages hold (or unknown);"
        " an earlier hop of a right chain, its answer. Held-out questions are left out.",
    )
    reader.add_argument("runs", nargs="+", help="`aisearch eval qa` run folders (or their questions.jsonl)")
    reader.add_argument(
        "--out", help=f"the JSONL file to write (default: <distill folder>/{READER_EXAMPLES})"
    )
    reader.set_defaults(func=guarded(cmd_reader_examples, (FileNotFoundError, ValueError), code=2))
