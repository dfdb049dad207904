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

The record schema and the summary are documented in ``evals/summary.py``.
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
import traceback
import uuid
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import requests
from langsmith import Client, tracing_context
from langsmith.evaluation import aevaluate
from langsmith.schemas import Example

from core.run import Run, open_run
from core.text import CITATION, sentences
from evals.baseline import Baselines
from evals.judge import Judge
from evals.qa_data import load_questions
from evals.summary import load_records, record_metrics, summarise
from evals.trace import traced_run

log = logging.getLogger(__name__)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SYSTEMS = ("aisearch", "rag", "closed_book")
ROUTE_NODES = {"plan": "planner", "execute_task": "executor"}
NAMESPACE = uuid.UUID("6f1c2d1e-0c55-4a53-9d7e-2f1bd0a6c1aa")
RECORDS = "questions.jsonl"


@dataclass
class QAOptions:
    """What to run and where to write it."""

    data: Path
    n: int | None = None
    offset: int = 0
    seed: int | None = None
    systems: tuple[str, ...] = ("aisearch", "rag")
    judge: bool = True
    concurrency: int = 1
    run_dir: Path | None = None
    question_timeout_s: float = 900.0
    upload: bool = False
    command: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class QAContext:
    """The live parts a run uses: the graph's run (models, tools), the baselines, the judge."""

    run: Run
    baselines: Baselines | None
    judge: Judge | None


def default_run_dir(options: QAOptions) -> Path:
    """``evals/results/qa-<date>-<dataset>-n<N>[-s<seed>][-o<offset>]``: the same command on the
    same day resumes the same run."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", Path(options.data).stem).strip("-") or "data"
    parts = [f"qa-{time.strftime('%Y-%m-%d')}-{name}", f"n{options.n if options.n is not None else 'all'}"]
    if options.seed is not None:
        parts.append(f"s{options.seed}")
    if options.offset:
        parts.append(f"o{options.offset}")
    return RESULTS_DIR / "-".join(parts)


def route_of(trajectory: list[str]) -> str:
    """The team configuration a trajectory shows: ``planner``, ``executor`` or ``writer_only``."""
    for node, route in ROUTE_NODES.items():
        if node in trajectory:
            return route
    return "writer_only"


def answer_sentences(text: str) -> list[dict[str, Any]]:
    """The answer's sentences, each with the source numbers it cites."""
    return [
        {"text": sentence, "cited": sorted({int(n) for n in CITATION.findall(sentence)})}
        for sentence in sentences(text)
        if sentence.strip()
    ]


def aisearch_record(trace: dict[str, Any]) -> dict[str, Any]:
    """The per-system record of one traced aisearch run."""
    values = trace["values"]
    answer = values.get("answer") or {}
    evidence = values.get("evidence") or {}
    results = list((values.get("results") or {}).values()) + list(values.get("discarded") or [])
    assessment = values.get("assessment") or {}
    plan = values.get("plan") or {}
    return {
        "prediction": answer.get("text", ""),
        "short": answer.get("short", ""),
        "citations": answer.get("citations", []),
        "evidence": [
            {
                "id": eid,
                "title": e.get("title", ""),
                "content": e.get("content", ""),
                "kind": e.get("kind", ""),
            }
            for eid, e in evidence.items()
        ],
        "sentences": answer_sentences(answer.get("text", "")),
        "route": values.get("route") or route_of(trace["trajectory"]),
        "strategy": assessment.get("strategy"),
        "assessment_fallback": bool(assessment.get("fallback")),
        "escalated": assessment.get("escalated"),
        "plan_tasks": len(plan.get("tasks", [])),
        "tool_calls": sum(len(r.get("tool_calls", [])) for r in results),
        "replans": int(values.get("replans") or 0),
        "missing": values.get("missing") or [],
        "node_seconds": trace["node_seconds"],
        "tokens": trace["tokens"],
        "trajectory": trace["trajectory"],
        "latency_s": round(trace["latency_s"], 3),
        "error": None,
    }


def error_record(exc: BaseException, started: float) -> dict[str, Any]:
    """A system record for a run that failed: the error, as data."""
    message = str(exc) or "no message"
    if isinstance(exc, TimeoutError):
        message = "the question's time limit ran out"
    log.debug("system failed:\n%s", "".join(traceback.format_exception(exc)))
    return {
        "prediction": "",
        "short": "",
        "citations": [],
        "evidence": [],
        "sentences": [],
        "route": "error",
        "node_seconds": {},
        "tokens": {},
        "trajectory": [],
        "latency_s": round(time.perf_counter() - started, 3),
        "error": f"{type(exc).__name__}: {message}"[:500],
    }


async def run_system(name: str, question: dict[str, Any], context: QAContext, timeout_s: float) -> dict:
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


async def judge_record(judge: Judge, question: dict[str, Any], systems: dict[str, dict]) -> dict[str, Any]:
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


# -- LangSmith evaluators: plain functions over the record ------------------------------------------


def answer_metrics(outputs: dict[str, Any], reference_outputs: dict[str, Any]) -> dict[str, Any]:
    """EM, F1, cover, supporting-title recall and citation scores of every system."""
    results = []
    for system in outputs.get("systems", {}):
        for key, value in record_metrics(outputs, system).items():
            if value is not None:
                results.append({"key": f"{system}.{key}", "score": value})
    return {"results": results}


def route_check(outputs: dict[str, Any], reference_outputs: dict[str, Any]) -> dict[str, Any]:
    """Trajectory evaluator: the route read from the checkpoint history must be an expected one.

    Expected routes come from the question (the regression set names them); a question with gold
    supporting documents (HotpotQA) must be searched, so answering it Writer-only is unexpected.
    """
    system = outputs.get("systems", {}).get("aisearch")
    if not system or system.get("error"):
        return {"key": "trajectory.expected_route", "score": None, "comment": "no aisearch run"}
    route = route_of(system.get("trajectory", []))
    expected = reference_outputs.get("expected_route")
    if expected:
        allowed = [expected] if isinstance(expected, str) else list(expected)
    elif reference_outputs.get("supporting_titles"):
        allowed = ["executor", "planner"]
    else:
        return {"key": "trajectory.expected_route", "score": None, "comment": "no expectation"}
    ok = route in allowed
    comment = f"route {route} ({' → '.join(system.get('trajectory', []))}); expected {' or '.join(allowed)}"
    return {"key": "trajectory.expected_route", "score": int(ok), "comment": comment}


EVALUATORS: list[Callable[..., dict[str, Any]]] = [answer_metrics, route_check]


class DiscardingAdapter(requests.adapters.BaseAdapter):
    """A transport that answers every LangSmith request with an empty 200, locally, with no I/O."""

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        """Drop the request; reply ``{}``."""
        response = requests.Response()
        response.status_code = 200
        response._content = b"{}"
        response.headers["Content-Type"] = "application/json"
        response.request, response.url = request, request.url or ""
        return response

    def close(self) -> None:
        """Nothing to close."""


def offline_client() -> Client:
    """A LangSmith client that never opens a socket.

    ``aevaluate`` traces the target itself even with ``upload_results=False`` (it forces
    ``tracing_context(enabled=True)`` around it), so the client's transport is a local sink.
    """
    client = Client(api_url="http://127.0.0.1:9", api_key="offline", info={}, auto_batch_tracing=False)
    for prefix in ("http://", "https://"):  # after construction: the client mounts its own adapters
        client.session.mount(prefix, DiscardingAdapter())
    return client


def to_example(question: dict[str, Any], dataset_id: uuid.UUID) -> Example:
    """A LangSmith example: the question as input, the gold answer and expectations as reference."""
    return Example(
        id=uuid.uuid5(NAMESPACE, question["id"]),
        dataset_id=dataset_id,
        inputs={"id": question["id"], "question": question["question"]},
        outputs={key: question.get(key) for key in ("answer", "supporting_titles", "type", "expected_route")},
    )


# -- the run ---------------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    """Versions and the machine, for the summary."""
    versions = {}
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


def check_resume(run_dir: Path, options: QAOptions) -> None:
    """Refuse to append to a run made with other data or systems (a different experiment)."""
    config_path = run_dir / "config.json"
    if not config_path.exists():
        return
    previous = json.loads(config_path.read_text(encoding="utf-8"))
    for key in ("data", "systems", "judge"):
        now = json.loads(json.dumps(asdict(options)[key], default=str))
        if previous.get(key) != now:
            raise ValueError(
                f"{run_dir} holds a run with {key}={previous.get(key)!r}, not {now!r}; "
                "choose another --run or --fresh to start it over"
            )


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
    (run_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if questions is None:
        questions = load_questions(options.data, options.n, options.offset, options.seed)
    records_path = run_dir / RECORDS
    done = {record["id"] for record in load_records(records_path)} if records_path.exists() else set()
    if records_path.exists() and not records_path.read_bytes().endswith(b"\n"):
        with open(records_path, "a", encoding="utf-8") as handle:  # a crash cut the last line short
            handle.write("\n")
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
                    flagged.append({"id": row["example"].inputs["id"], "comment": result.comment})
    bar.close()
    records = [r for r in load_records(records_path) if r["id"] in {q["id"] for q in questions}]
    config.update(environment())
    config["date"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    summary = summarise(records, config)
    summary["trajectory_checks"] = trajectory_checks(records)
    summary["langsmith"] = {
        "uploaded": uploading,
        "feedback_means_this_session": {k: round(sum(v) / len(v), 4) for k, v in sorted(feedback.items())},
        "flagged_this_session": flagged,
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    write_report(run_dir)
    return summary


def trajectory_checks(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The trajectory evaluator over every record of the run: how many routes were unexpected."""
    checked, unexpected = 0, []
    for record in records:
        verdict = route_check(record, record)
        if verdict["score"] is None:
            continue
        checked += 1
        if not verdict["score"]:
            unexpected.append({"id": record["id"], "comment": verdict["comment"]})
    return {"checked": checked, "unexpected": len(unexpected), "examples": unexpected[:20]}


def unstreamed(model: Any) -> Any:
    """The model with token streaming off: llama.cpp's server reports no usage on a stream, and the
    evaluation needs every role's tokens (no one watches the tokens arrive here)."""
    return model.model_copy(update={"streaming": False}) if getattr(model, "streaming", False) else model


@asynccontextmanager
async def open_context(
    settings: Any,
    *,
    corpus: Path | None,
    systems: tuple[str, ...],
    judge: bool,
    collection: str = "hotpotqa",
    index_dir: Path | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    show_progress: bool = False,
) -> AsyncIterator[QAContext]:
    """Index the corpus (or reuse it), start the model server and the MCP servers, and yield the
    parts of a run; everything started here is stopped on exit."""
    from langchain_openai import ChatOpenAI

    from evals.retrieval import default_eval_index_dir
    from models.factory import build_chat_model
    from tools.index.ingest import index_sources
    from tools.index.search import Searcher
    from tools.index.sources import file_source
    from tools.index.store import IndexStore
    from tools.registry import DOCSEARCH_MODULE, load_connections

    connections = load_connections(settings.mcp_config)
    searcher = None
    if corpus is not None:
        store = IndexStore(index_dir or default_eval_index_dir())
        corpus_path = Path(corpus).expanduser().resolve()
        if not corpus_path.is_file():
            raise FileNotFoundError(f"corpus not found: {corpus_path}")
        await asyncio.to_thread(
            index_sources,
            store.collection(collection),
            [file_source(corpus_path)],
            in_scope=lambda key: key != str(corpus_path),
            show_progress=show_progress,
        )
        searcher = Searcher(store.require(collection))
        docsearch = dict(connections.get("docsearch") or next(iter(connections.values())))
        docsearch.update(
            transport="stdio",
            command=sys.executable,
            args=["-m", DOCSEARCH_MODULE, "--index-dir", str(store.root), "--no-default-build"],
            env={**docsearch.get("env", {}), "AISEARCH_DOCSEARCH_COLLECTION": collection},
        )
        connections["docsearch"] = docsearch

    def models(role: Any) -> Any:
        return unstreamed(build_chat_model(role, settings))

    async with open_run(settings, connections=connections, models=models) as run:
        for server, error in run.tools.server_errors.items():
            log.warning("MCP server %s unavailable: %s", server, error)
        needs_baselines = any(s in systems for s in ("rag", "closed_book"))
        baselines = Baselines(build_chat_model("writer", settings), searcher) if needs_baselines else None
        grader = None
        if judge:
            if judge_base_url or judge_model:
                writer = settings.role("writer")
                model = ChatOpenAI(
                    model=judge_model or writer.model,
                    base_url=judge_base_url or build_chat_model("writer", settings).openai_api_base,
                    api_key=os.environ.get("AISEARCH_JUDGE_API_KEY") or writer.api_key or "not-needed",
                    timeout=writer.timeout_s,
                    max_retries=1,
                )
                grader = Judge(model, constrain=judge_base_url is None)
            else:
                grader = Judge(
                    build_chat_model("writer", settings), constrain=settings.role("writer").constrain_json
                )
        yield QAContext(run=run, baselines=baselines, judge=grader)
