"""``aisearch eval qa``: aisearch against same-model RAG (and closed-book) on real questions.

For every question the systems run one after the other (side by side in time, so the machine's
load affects both alike): aisearch end to end through the real graph, the vanilla RAG baseline
(one hybrid retrieval of the raw question over the same index, one call to the same Writer model)
and optionally closed-book. An LLM judge then grades each answer (correctness and faithfulness,
3-point) and compares aisearch with RAG blind. One line per question is appended to
``<run_dir>/questions.jsonl`` as soon as it is done, so a stopped run resumes where it stopped.

Runs go through LangSmith's ``aevaluate`` with an offline client (``upload_results=False``, no
socket opened); the evaluators are plain functions over the per-question record (answer metrics
and a trajectory check that flags an unexpected route). With ``LANGSMITH_API_KEY`` set and
``upload=True`` the same run is uploaded instead.

The record schema is documented in ``evals/record_metrics.py``, the summary in ``evals/summary.py``.
The parts live beside this module: ``qa_context.py`` (the live run, baselines, judge), ``qa_records.py`` (records),
``qa_evaluators.py`` (evaluators), ``langsmith_offline.py`` (the offline client).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import platform
import re
import sys
import time
import uuid
import warnings
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from langsmith import tracing_context
from langsmith.evaluation import aevaluate

from evals.judge import Judge
from evals.langsmith_offline import NAMESPACE, offline_client, to_example
from evals.qa_context import QAContext
from evals.qa_data import load_questions
from evals.qa_evaluators import EVALUATORS, trajectory_checks
from evals.qa_records import aisearch_record, error_record
from evals.run_dirs import RESULTS_DIR, code_version
from evals.run_records import RECORDS, SUMMARY, load_records, load_run_records
from evals.summary import summarise
from evals.trace import traced_run

log = logging.getLogger(__name__)

SYSTEMS = ("aisearch", "rag", "closed_book")


@dataclass
class QAOptions:
    """What to run and where to write it."""

    data: Path
    n: int | None = None
    offset: int = 0
    seed: int | None = None
    split: str = "all"  # "tune", "held_out" or "all" (evals/qa_data.py split_of)
    kind: str | None = None  # only questions of this type (e.g. "comparison")
    systems: tuple[str, ...] = ("aisearch", "rag")
    judge: bool = True
    concurrency: int = 1
    run_dir: Path | None = None
    question_timeout_s: float = 900.0
    upload: bool = False
    command: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def default_run_dir(options: QAOptions) -> Path:
    """``results/qa-<date>-<dataset>-n<N>[-s<seed>][-o<offset>]``: the same command on the
    same day resumes the same run."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", Path(options.data).stem).strip("-") or "data"
    parts = [f"qa-{time.strftime('%Y-%m-%d')}-{name}", f"n{options.n if options.n is not None else 'all'}"]
    if options.split != "all":
        parts.append(options.split.replace("_", "-"))
    if options.kind:
        parts.append(re.sub(r"[^A-Za-z0-9]+", "-", options.kind))
    if options.seed is not None:
        parts.append(f"s{options.seed}")
    if options.offset:
        parts.append(f"o{options.offset}")
    return RESULTS_DIR / "-".join(parts)


async def run_system(
    name: str, question: dict[str, Any], context: QAContext, timeout_s: float
) -> dict[str, Any]:
    """Answer one question with one system; failures become the record's ``error``."""
    started = time.perf_counter()
    text = question["question"]
    try:
        if name == "aisearch":
            trace = await asyncio.wait_for(
                traced_run(context.run, text, f"eval-{question['id']}-{uuid.uuid4().hex[:6]}"),
                timeout_s,
            )
            return aisearch_record(trace)
        if context.baselines is None:
            raise ValueError(f"system {name!r} needs a model and (for rag) a corpus")
        if name == "rag":
            return await asyncio.wait_for(context.baselines.rag(text), timeout_s)
        if name == "closed_book":
            return await asyncio.wait_for(context.baselines.closed_book(text), timeout_s)
        raise ValueError(f"unknown system {name!r}")
    except Exception as exc:  # noqa: BLE001 - one question's failure is data, the run goes on
        return error_record(exc, started)


async def judge_record(
    judge: Judge, question: dict[str, Any], systems: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Correctness and faithfulness per system, and aisearch vs RAG side by side."""
    verdicts: dict[str, Any] = {}
    gold = str(question.get("answer") or "")
    for name, system in systems.items():
        if system.get("error"):
            verdicts[name] = {"correctness": 0 if gold else None, "faithfulness": None}
            continue
        verdicts[name] = {
            "correctness": await judge.correctness(question["question"], gold, system) if gold else None,
            "faithfulness": await judge.faithfulness(question["question"], system)
            if system.get("evidence")
            else None,
        }
    if gold and "aisearch" in systems and "rag" in systems:
        verdicts["pairwise"] = {
            "aisearch_vs_rag": await judge.pairwise(
                question["id"], question["question"], gold, systems["aisearch"], systems["rag"]
            )
        }
    return verdicts


async def answer_question(question: dict[str, Any], context: QAContext, options: QAOptions) -> dict[str, Any]:
    """The full per-question record: every system's answer, then the judge's verdicts."""
    record: dict[str, Any] = {
        "id": question["id"],
        "question": question["question"],
        "gold": question.get("answer"),
        "aliases": question.get("answer_aliases") or [],  # MuSiQue's other accepted answers
        "type": question.get("type"),
        "level": question.get("level"),
        "supporting_titles": question.get("supporting_titles", []),
        "expected_route": question.get("expected_route"),
        "systems": {},
    }
    for name in options.systems:
        record["systems"][name] = await run_system(name, question, context, options.question_timeout_s)
    if options.judge and context.judge is not None:
        started = time.perf_counter()
        record["judge"] = await judge_record(context.judge, question, record["systems"])
        record["judge_seconds"] = round(time.perf_counter() - started, 3)
    return record


# -- the run ---------------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    """Versions and the machine, for the summary."""
    versions: dict[str, str | None] = {}
    for package in ("langgraph", "langchain-openai", "langsmith", "llama-cpp-python", "chromadb", "mcp"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "versions": versions,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
    }


def check_resume(
    run_dir: Path,
    options: Any,
    keys: tuple[str, ...] = ("data", "systems", "judge"),
    defaults: dict[str, Any] | None = None,
) -> None:
    """Refuse to append to a run made with other data or systems (a different experiment).

    Args:
        run_dir: the run directory (its ``config.json`` holds the previous run's options).
        options: this run's options (a dataclass).
        keys: the options that must not change between the sittings of one run.
        defaults: what a key a run recorded before the option existed stood for.

    Raises:
        ValueError: when one of ``keys`` differs from the recorded run's.
    """
    config_path = run_dir / "config.json"
    if not config_path.exists():
        return
    previous = json.loads(config_path.read_text(encoding="utf-8"))
    for key in keys:
        now = json.loads(json.dumps(asdict(options)[key], default=str))
        if previous.get(key, (defaults or {}).get(key)) != now:
            raise ValueError(
                f"{run_dir} holds a run with {key}={previous.get(key)!r}, not {now!r}; "
                "choose another --run or --fresh to start it over"
            )


def sitting() -> dict[str, Any]:
    """When this sitting of a run started, and the code it ran."""
    return {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        **code_version(),
    }


def previous_sittings(run_dir: Path) -> list[dict[str, Any]]:
    """The sittings a resumed run recorded before this one."""
    config_path = run_dir / "config.json"
    if not config_path.exists():
        return []
    sittings = json.loads(config_path.read_text(encoding="utf-8")).get("sittings", [])
    return sittings if isinstance(sittings, list) else []


def finished_ids(records_path: Path) -> set[str]:
    """The ids already recorded in a run's JSONL (for resuming); a last line that a crash cut short
    is ignored, and ended so that the next record starts on a line of its own."""
    if not records_path.exists():
        return set()
    done = {record["id"] for record in load_records(records_path)}
    if not records_path.read_bytes().endswith(b"\n"):
        with open(records_path, "a", encoding="utf-8") as handle:
            handle.write("\n")
    return done


async def run_qa(
    options: QAOptions,
    context: QAContext,
    *,
    questions: list[dict[str, Any]] | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Run every question not yet in the run directory, then summarise and report the whole run.

    Returns:
        The summary (see ``evals/summary.py``), also written to ``summary.json`` with the report.
    """
    from tqdm import tqdm

    from evals.report import write_report

    run_dir = Path(options.run_dir or default_run_dir(options))
    run_dir.mkdir(parents=True, exist_ok=True)
    check_resume(run_dir, options)
    config = {**json.loads(json.dumps(asdict(options), default=str)), "run_dir": str(run_dir)}
    config["sittings"] = [*previous_sittings(run_dir), sitting()]
    (run_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if questions is None:
        questions = load_questions(
            options.data, options.n, options.offset, options.seed, options.split, options.kind
        )
    records_path = run_dir / RECORDS
    done = finished_ids(records_path)
    todo = [q for q in questions if q["id"] not in done]
    log.info(
        "%d questions, %d already done, %d to run", len(questions), len(questions) - len(todo), len(todo)
    )
    lock = asyncio.Lock()
    bar = tqdm(total=len(todo), desc="questions", unit="q", file=sys.stderr, disable=not show_progress)
    by_id = {q["id"]: q for q in todo}

    uploading = options.upload and bool(os.environ.get("LANGSMITH_API_KEY"))

    async def target(inputs: dict[str, Any]) -> dict[str, Any]:
        # offline, the graph's own LangChain runs must not be traced: the tracer would post them
        # through the offline client (and block on its retries); uploading, they are the trace
        with tracing_context(enabled=True if uploading else False):
            record = await answer_question(by_id[inputs["id"]], context, options)
        async with lock:
            with open(records_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, default=str) + "\n")
            bar.update(1)
        return record

    feedback: dict[str, list[float]] = {}
    flagged: list[dict[str, Any]] = []
    if todo:
        dataset_id = uuid.uuid5(NAMESPACE, str(Path(options.data).resolve()))
        with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
            # LangSmith prints its experiment name on stdout (which --json keeps for the summary)
            warnings.filterwarnings("ignore", message=".*upload_results.*")
            results = await aevaluate(
                target,
                data=[to_example(q, dataset_id) for q in todo],
                evaluators=EVALUATORS,
                max_concurrency=max(1, options.concurrency),
                upload_results=uploading,
                client=None if uploading else offline_client(),
                experiment_prefix="aisearch-qa",
                metadata={"systems": list(options.systems), "judge": options.judge},
            )
        async for row in results:
            for result in row["evaluation_results"]["results"]:
                if result.score is not None:
                    feedback.setdefault(result.key, []).append(float(result.score))
                if result.key == "trajectory.expected_route" and result.score == 0:
                    flagged.append({"id": (row["example"].inputs or {}).get("id"), "comment": result.comment})
    bar.close()
    records = [r for r in load_run_records(run_dir) if r["id"] in {q["id"] for q in questions}]
    config.update(environment())
    config["date"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    summary = summarise(records, config)
    summary["trajectory_checks"] = trajectory_checks(records)
    summary["langsmith"] = {
        "uploaded": uploading,
        "feedback_means_this_session": {k: round(sum(v) / len(v), 4) for k, v in sorted(feedback.items())},
        "flagged_this_session": flagged,
    }
    (run_dir / SUMMARY).write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    write_report(run_dir)
    return summary
