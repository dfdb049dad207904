"""``aisearch eval bfcl``: one configured model's tool calls on BFCL's single-turn tasks.

Each task is one step: the question's messages go to the chat model once, in one of BFCL's two modes:

* ``fc`` (function calling, the default): a short system prompt (the persona and task of BFCL's own
  prompts) and the task's functions as OpenAI ``tools`` (``tool_choice="auto"``);
* ``prompt``: BFCL's default prompting-mode system prompt, with the functions as JSON in it and the
  calls asked for as ``[func(a=1), ...]``; no ``tools`` are sent;
* ``thought`` / ``nothought``: the distilled executor's JSON prompts (:mod:`evals.executor_prompts`);
* ``schema``: ``nothought``'s prompt with its reply constrained to the task's functions by a JSON
  schema (``response_format``), the way the graph's executor asks for its calls. With ``margins``
  the endpoint's log-probabilities are asked for too, and each record keeps its decline margin
  (:mod:`evals.decline_margin`).

The reply's ``tool_calls``, or the calls written in its text, are scored by BFCL's checker
(:mod:`evals.bfcl_score`). The step's wall time is its latency. An endpoint error or a timeout is
recorded as that task's failure (scored wrong) and the run goes on.

With ``tool_docs="refined"`` the tasks come with their functions' DRAFT-refined documents
(:func:`evals.bfcl_data.with_refined_documents`), and the options record which functions had one.

One line per task is appended to ``<run_dir>/bfcl.jsonl`` as soon as it is scored, so a stopped run
resumes where it stopped; then ``summary.json`` and ``report.md`` are written
(:mod:`evals.bfcl_report`). Tasks run one at a time, so latencies are not inflated by each other.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from evals.bfcl_calls import read_calls
from evals.bfcl_data import DEFAULT_CATEGORIES, BfclTask, split_of
from evals.bfcl_fetch import BFCL_PACKAGE, BFCL_VERSION
from evals.bfcl_schema import ToolSet
from evals.bfcl_score import Scorer
from evals.decline_margin import TOP_LOGPROBS, decline_margin, declines, reply_logprobs
from evals.executor_prompts import EXECUTOR_MODES, calls_response_format, executor_system_prompt
from evals.qa_runner import check_resume, environment, finished_ids
from evals.run_dirs import RESULTS_DIR
from evals.run_records import load_records

log = logging.getLogger(__name__)

RECORDS = "bfcl.jsonl"
TEXT_KEPT = 600  # characters of a reply's text kept in its record
SYSTEM_PROMPT = (
    "You are an expert in composing functions. You are given a question and a set of possible "
    "functions. Based on the question, you will need to make one or more function/tool calls to "
    "achieve the purpose. If none of the functions can be used, point it out. If the given question "
    "lacks the parameters required by the function, also point it out."
)  # BFCL's own persona and task (constants/default_prompts.py, "classic")
PROMPT_MODE_SYSTEM = (
    f"{SYSTEM_PROMPT}\nYou should only return the function calls in your response.\n\n"
    "If you decide to invoke any of the function(s), you MUST put it in the format of "
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]\n"
    "You SHOULD NOT include any other text in the response.\n\n"
    "Here is a list of functions in JSON format that you can invoke.\n{functions}\n"
)  # BFCL's default prompting-mode system prompt (its _DEFAULT_SYSTEM_PROMPT, single-turn)
SCHEMA_MODE = "schema"
MODES: tuple[str, ...] = ("fc", "prompt", *EXECUTOR_MODES, SCHEMA_MODE)


@dataclass
class BfclOptions:
    """What to run and where to write it."""

    role: str = "executor"
    model: str = ""
    base_url: str = ""
    categories: tuple[str, ...] = DEFAULT_CATEGORIES
    split: str = "all"
    mode: str = "fc"
    n: int | None = None
    timeout_s: float = 180.0
    data: str = f"{BFCL_PACKAGE}=={BFCL_VERSION}"
    tool_docs: str = "original"  # or "refined": the functions' DRAFT-refined documents where stored
    refined_documents: dict[str, str] = field(default_factory=dict)  # function -> refined document's hash
    stale_refinements: list[str] = field(default_factory=list)  # refined from another original: not shown
    margins: bool = False  # schema mode: record each reply's decline margin (asks for log-probabilities)
    decline_threshold: float | None = None  # with margins: a margin above it declines, at or below it calls
    repeat_penalty: float | None = None  # the local server's, as the role sends it (None: a remote endpoint)
    run_dir: Path | None = None
    command: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-") or "model"


def default_run_dir(options: BfclOptions) -> Path:
    """``results/bfcl-<date>-<role>-<model>-<split>-n<N>``: the same command on the same day
    resumes the same run."""
    parts = [f"bfcl-{time.strftime('%Y-%m-%d')}", options.role, _slug(Path(options.model).stem)]
    parts += [options.split, f"n{options.n if options.n is not None else 'all'}"]
    if options.mode != "fc":
        parts.append(options.mode)
    if options.tool_docs != "original":
        parts.append(f"{options.tool_docs}-docs")
    if tuple(options.categories) != DEFAULT_CATEGORIES:
        parts.append(_slug("+".join(options.categories)))
    return RESULTS_DIR / "-".join(parts)


def messages_for(task: BfclTask, mode: str = "fc") -> list[dict[str, Any]]:
    """The chat messages of a task: the mode's system prompt first (merged into the task's own, if any)."""
    if mode == "prompt":
        system = PROMPT_MODE_SYSTEM.format(functions=json.dumps(task.functions, indent=4))
    elif mode in EXECUTOR_MODES or mode == SCHEMA_MODE:
        system = executor_system_prompt(task.functions, "nothought" if mode == SCHEMA_MODE else mode)
    else:
        system = SYSTEM_PROMPT
    messages = [dict(m) for m in task.messages]
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = f"{system}\n\n{messages[0].get('content', '')}"
        return messages
    return [{"role": "system", "content": system}, *messages]


def _text(message: Any) -> str:
    content = getattr(message, "content", "")
    return content if isinstance(content, str) else json.dumps(content, default=str)


async def _ask(bound: Any, messages: list[dict[str, Any]], timeout_s: float) -> tuple[Any, str | None]:
    """One model call: its reply, or None and what failed (an endpoint failure is data)."""
    try:
        return await asyncio.wait_for(bound.ainvoke(messages), timeout_s), None
    except TimeoutError:
        return None, f"timeout after {timeout_s:g} s"
    except Exception as exc:  # noqa: BLE001 - one task's failure is data, the run goes on
        return None, f"{type(exc).__name__}: {str(exc)[:300]}"


async def run_task(
    model: BaseChatModel,
    task: BfclTask,
    scorer: Scorer,
    timeout_s: float,
    mode: str = "fc",
    *,
    margins: bool = False,
    decline_threshold: float | None = None,
) -> dict[str, Any]:
    """One task end to end: ask, read the calls, score; an endpoint failure becomes the record's
    ``failure``. With ``margins`` (schema mode only) the record keeps its ``decline_margin``; with
    a ``decline_threshold`` too, the margin decides whether the step declines (above it) or calls
    (at or below it): a call the reply made is dropped, or a decline is asked again with at least
    one call required (:func:`evals.decline_margin.declines`); ``decided`` records which, and
    ``greedy_calls`` / ``greedy_correct`` what the reply alone made and scored."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    if margins and mode != SCHEMA_MODE:
        raise ValueError(f"decline margins are read in the {SCHEMA_MODE} mode only, not {mode!r}")
    if decline_threshold is not None and not margins:
        raise ValueError("a decline threshold acts on decline margins: record them too")
    tools = ToolSet(task.functions)
    record: dict[str, Any] = {"id": task.id, "category": task.category, "split": split_of(task.id)}
    if mode == "fc":
        bound = model.bind(tools=tools.tools, tool_choice="auto", stream=False)
    elif mode == SCHEMA_MODE:
        logprobs: dict[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if margins else {}
        bound = model.bind(response_format=calls_response_format(task.functions), stream=False, **logprobs)
    else:
        bound = model.bind(stream=False)
    started = time.perf_counter()
    message, failure = await _ask(bound, messages_for(task, mode), timeout_s)
    if message is None:
        record["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
        log.warning("%s: %s", task.id, failure)
        record.update(correct=False, failure=failure, error_type="endpoint_error", error=failure)
        record.update(source="none", calls=[], text="", problems=[])
        return record
    read = read_calls(message, tools)
    calls, text = read.calls, _text(message)
    if margins:
        record["decline_margin"] = decline_margin(reply_logprobs(message))
    if decline_threshold is not None and record["decline_margin"] is not None:
        decline = declines(record["decline_margin"], decline_threshold)
        if decline and calls:
            calls, record["decided"] = [], "declined"
        elif not decline and not calls and task.functions:
            again = model.bind(
                response_format=calls_response_format(task.functions, at_least_one=True), stream=False
            )
            second, problem = await _ask(again, messages_for(task, mode), timeout_s)
            if second is None:
                log.warning("%s: asked for a call again: %s; the decline stands", task.id, problem)
            else:
                calls, text, record["decided"] = read_calls(second, tools).calls, _text(second), "called"
    record["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
    if record.get("decided"):  # what the reply alone would have scored
        record.update(greedy_calls=read.calls, greedy_correct=scorer.score(task, read.calls).correct)
    verdict = scorer.score(task, calls)
    record.update(correct=verdict.correct, failure=None, error_type=verdict.error_type, error=verdict.error)
    record.update(source=read.source, calls=calls, text=text[:TEXT_KEPT], problems=read.problems)
    return record


async def run_bfcl(
    options: BfclOptions,
    model: BaseChatModel,
    tasks: list[BfclTask],
    scorer: Scorer,
    *,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Run every task not yet in the run directory, then summarise and report the whole run.

    Returns:
        The summary (see :mod:`evals.bfcl_report`), also written to ``summary.json`` with ``report.md``.

    Raises:
        ValueError: When the run directory holds a run of another model, role or split.
    """
    from tqdm import tqdm

    from evals.bfcl_report import summarise, write_report

    run_dir = Path(options.run_dir or default_run_dir(options))
    run_dir.mkdir(parents=True, exist_ok=True)
    check_resume(
        run_dir,
        options,
        keys=(
            "role",
            "model",
            "base_url",
            "split",
            "mode",
            "data",
            "tool_docs",
            "refined_documents",
            "margins",
            "decline_threshold",
            "repeat_penalty",
        ),
        defaults={
            "tool_docs": "original",
            "refined_documents": {},
            "margins": False,
            "decline_threshold": None,
            "repeat_penalty": 1.1,  # runs written before the setting: the local server's default then
        },
    )
    config = {**json.loads(json.dumps(asdict(options), default=str)), "run_dir": str(run_dir)}
    (run_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    records_path = run_dir / RECORDS
    done = finished_ids(records_path)
    todo = [t for t in tasks if t.id not in done]
    log.info("%d tasks, %d already done, %d to run", len(tasks), len(tasks) - len(todo), len(todo))
    bar = tqdm(total=len(todo), desc="bfcl", unit="task", file=sys.stderr, disable=not show_progress)
    for task in todo:
        record = await run_task(
            model,
            task,
            scorer,
            options.timeout_s,
            options.mode,
            margins=options.margins,
            decline_threshold=options.decline_threshold,
        )
        with open(records_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=str) + "\n")
        bar.update(1)
    bar.close()
    wanted = {t.id for t in tasks}
    records = [r for r in load_records(records_path) if r["id"] in wanted]
    config.update(environment())
    config["date"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    summary = summarise(records, config)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    write_report(run_dir, summary, records)
    return summary
