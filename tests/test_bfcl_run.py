"""``aisearch eval bfcl``: the run over scripted chat models, failures as data, resume, and the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from evals.bfcl_data import DEFAULT_CATEGORIES, load_tasks, with_refined_documents
from evals.bfcl_run import RECORDS, SYSTEM_PROMPT, BfclOptions, default_run_dir, messages_for, run_bfcl
from evals.bfcl_score import Scorer
from evals.bundled_tools import SET_DIR
from evals.executor_prompts import calls_schema
from tests.conftest import REPO
from tests.support.bfcl import FIXTURE_DATA, bfcl_root  # noqa: F401 - a fixture
from tests.support.fake_openai import fake_openai
from tests.support.fakes import ScriptedChatModel
from tools.refinements import Refinement, description_hash, save_refinement

IRRELEVANCE = load_tasks(FIXTURE_DATA, ("irrelevance",))
BUNDLED_IRRELEVANCE = load_tasks(SET_DIR, ("bundled_irrelevance",))
REFINED = "Calculator: evaluates one arithmetic expression, e.g. '17 * 23 + 4' (refined by DRAFT)."


class ToolCallingModel(BaseChatModel):
    """Replies with scripted ``tool_calls`` (or text) by a substring of the last message; records
    what each call was given."""

    script: list[tuple[str, Any]]
    seen: list[dict[str, Any]] = []

    @property
    def _llm_type(self) -> str:
        return "tool-calling-fake"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ):
        self.seen.append({"messages": messages, **kwargs})
        last = str(messages[-1].content)
        reply = next(reply for needle, reply in self.script if needle in last)
        if isinstance(reply, str):
            message = AIMessage(content=reply)
        else:
            calls = [{"name": name, "args": args, "id": f"c{i}"} for i, (name, args) in enumerate(reply)]
            message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


class FailingModel(BaseChatModel):
    """An endpoint that errors, or answers only after ``delay_s`` (a timeout)."""

    delay_s: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "failing-fake"

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise ConnectionError("connection refused by the endpoint")

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="late"))])
        raise ConnectionError("connection refused by the endpoint")


def options(tmp_path: Path, **overrides: Any) -> BfclOptions:
    values: dict[str, Any] = {
        "model": "fake",
        "base_url": "http://fake",
        "split": "all",
        "run_dir": tmp_path / "run",
    }
    return BfclOptions(**{**values, **overrides})


def run(opts: BfclOptions, model: BaseChatModel, tasks: list, scorer: Scorer) -> dict[str, Any]:
    return asyncio.run(run_bfcl(opts, model, tasks, scorer))


def test_a_run_scores_every_category_and_writes_its_report(tmp_path: Path, bfcl_root: Path) -> None:  # noqa: F811
    tasks = load_tasks(FIXTURE_DATA, DEFAULT_CATEGORIES, "all")
    model = ToolCallingModel(
        script=[
            ("triangle with a base of 10", [("geometry_triangle_area", {"base": 10, "height": 5})]),
            ("Paris", '[get_weather(city="Paris", days=3)]'),  # written as text
            ("100 US dollars", [("convert_currency", {"amount": 100, "source": "USD", "target": "GBP"})]),
            ("every_type", [("every_type", {"s": "a", "i": 2})]),
            ("Oslo", [("geometry_triangle_area", {"base": 1, "height": 1})]),  # the wrong function
            ("Rome and in Madrid", [("get_weather", {"city": "Madrid"}), ("get_weather", {"city": "Rome"})]),
            ("Lima", [("get_weather", {"city": "Lima"})]),  # one of two calls
            ("Hamlet", "Shakespeare wrote it; no function here helps."),
            ("x^2", [("get_weather", {"city": "x"})]),  # a call where none fits
        ],
        seen=[],
    )
    summary = run(options(tmp_path), model, tasks, Scorer(bfcl_root))
    assert summary["n"] == 9 and summary["correct"] == 5
    by = {name: block["accuracy"] for name, block in summary["by_category"].items()}
    assert by == {
        "simple_python": 0.75,
        "multiple": 0.0,
        "parallel": 1.0,
        "parallel_multiple": 0.0,
        "irrelevance": 0.5,
    }
    assert summary["accuracy"] == pytest.approx(0.45) and summary["micro_accuracy"] == pytest.approx(
        5 / 9, abs=1e-4
    )
    assert summary["sources"] == {"tool_calls": 7, "text": 1, "none": 1} and summary["failures"] == 0
    assert summary["p50_ms"] is not None and summary["p80_ms"] >= summary["p50_ms"]
    first = model.seen[0]
    assert (
        first["tool_choice"] == "auto" and first["tools"][0]["function"]["name"] == "geometry_triangle_area"
    )
    assert first["messages"][0].content == SYSTEM_PROMPT
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| **overall** | 9 | **45.0 %** |" in report and "multiple_0" in report
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["by_category"]["parallel"]["correct"] == 1 and saved["config"]["role"] == "executor"


def test_endpoint_errors_and_timeouts_are_recorded_failures(tmp_path: Path) -> None:
    summary = run(options(tmp_path), FailingModel(), IRRELEVANCE, Scorer(None))
    assert summary["failures"] == 2 and summary["correct"] == 0, "a failed step is wrong, even on irrelevance"
    assert summary["p50_ms"] is None and summary["error_types"] == {"endpoint_error": 2}
    records = [json.loads(line) for line in (tmp_path / "run" / RECORDS).read_text().splitlines()]
    assert "ConnectionError: connection refused" in records[0]["failure"]
    slow = run(
        options(tmp_path, timeout_s=0.2, run_dir=tmp_path / "slow"),
        FailingModel(delay_s=5),
        IRRELEVANCE,
        Scorer(None),
    )
    assert slow["failures"] == 2
    assert "timeout after 0.2 s" in (tmp_path / "slow" / "report.md").read_text()


def test_a_stopped_run_resumes_and_refuses_another_model(tmp_path: Path) -> None:
    text = ScriptedChatModel().on("", "No function fits this question.")
    first = run(options(tmp_path), text, IRRELEVANCE[:1], Scorer(None))
    assert first["n"] == 1 and len(text.calls) == 1
    again = run(options(tmp_path), text, IRRELEVANCE, Scorer(None))
    assert again["n"] == 2 and again["accuracy"] == 1.0 and len(text.calls) == 2, "only the new task is asked"
    other = BfclOptions(model="other", base_url="http://fake", split="all", run_dir=tmp_path / "run")
    with pytest.raises(ValueError, match="model"):
        run(other, text, IRRELEVANCE, Scorer(None))


def cli(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "eval", "bfcl", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    (tmp_path / "config.toml").touch()
    env = {k: v for k, v in os.environ.items() if k != "AISEARCH_BFCL_WHEEL"}
    return {
        **env,
        "AISEARCH_CONFIG": str(tmp_path / "config.toml"),
        "AISEARCH_CACHE_DIR": str(tmp_path / "cache"),
        **extra,
    }


@pytest.mark.slow
def test_cli_says_clearly_when_bfcl_cannot_be_fetched(tmp_path: Path) -> None:
    done = cli("--n", "1", env=cli_env(tmp_path, PIP_NO_INDEX="1", AISEARCH_BASE_URL="http://127.0.0.1:9/v1"))
    assert done.returncode == 2, done.stderr
    assert "aisearch: error: could not fetch BFCL data (bfcl-eval==2026.3.23)" in done.stderr
    assert "Traceback" not in done.stderr
    bogus = tmp_path / "bfcl_eval-2026.3.23-py3-none-any.whl"
    bogus.write_bytes(b"not a wheel")
    done = cli("--n", "1", env=cli_env(tmp_path, AISEARCH_BFCL_WHEEL=str(bogus)))
    assert done.returncode == 2 and "expected 3bb6dfa5" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_cli_runs_against_an_openai_compatible_endpoint(tmp_path: Path) -> None:
    rules = [("Hamlet", "None of the functions can answer that."), ("x^2", 503)]
    with fake_openai(rules) as server:
        args = ("--category", "irrelevance", "--split", "all", "--data-dir", str(FIXTURE_DATA))
        done = cli(
            *args,
            "--run",
            str(tmp_path / "run"),
            "--json",
            "-q",
            env=cli_env(tmp_path, AISEARCH_BASE_URL=server.url),
        )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["n"] == 2 and summary["correct"] == 1 and summary["failures"] == 1
    assert (
        summary["config"]["model"] == "qwen2.5-coder-0.5b-instruct"
        and summary["config"]["role"] == "executor"
    )
    body = server.bodies[0]
    assert body["tool_choice"] == "auto" and body["tools"][0]["function"]["name"] == "geometry_triangle_area"
    assert body["messages"][0]["role"] == "system"


def test_prompt_mode_sends_bfcls_prompt_and_no_tools(tmp_path: Path, bfcl_root: Path) -> None:  # noqa: F811
    tasks = load_tasks(FIXTURE_DATA, ("simple_python",), "all", n=1)
    model = ToolCallingModel(script=[("triangle", "[geometry.triangle_area(base=10, height=5)]")], seen=[])
    summary = run(options(tmp_path, mode="prompt"), model, tasks, Scorer(bfcl_root))
    assert summary["correct"] == 1 and summary["sources"] == {"text": 1}
    seen = model.seen[0]
    assert "tools" not in seen and "tool_choice" not in seen
    system = seen["messages"][0].content
    assert "[func_name1(params_name1=params_value1" in system and '"geometry.triangle_area"' in system
    with pytest.raises(ValueError, match="mode"):
        run(options(tmp_path), model, tasks, Scorer(bfcl_root))  # the same run in another mode


def test_schema_mode_constrains_the_reply_to_the_tasks_functions(tmp_path: Path, bfcl_root: Path) -> None:  # noqa: F811
    tasks = load_tasks(FIXTURE_DATA, ("simple_python",), "all", n=1)
    reply = json.dumps(
        {"tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}]}
    )
    model = ToolCallingModel(script=[("triangle", reply)], seen=[])
    summary = run(options(tmp_path, mode="schema"), model, tasks, Scorer(bfcl_root))
    assert summary["correct"] == 1
    seen = model.seen[0]
    assert "tools" not in seen and '"tool_calls"' in seen["messages"][0].content  # nothought's prompt
    schema = seen["response_format"]["schema"]
    jsonschema.validate(json.loads(reply), schema)
    jsonschema.validate({"tool_calls": []}, schema)  # declining is a reply
    wrong_name = {"tool_calls": [{"name": "geometry.circle_area", "arguments": {"radius": 2}}]}
    wrong_type = {"tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": "ten"}}]}
    for bad in (wrong_name, wrong_type, {"calls": []}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_a_task_without_functions_can_only_decline() -> None:
    schema = calls_schema([])
    jsonschema.validate({"tool_calls": []}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool_calls": [{"name": "x", "arguments": {}}]}, schema)


def store_refinements(tools_dir: Path) -> str:
    """A refinement of ``python.calculate``'s current document, and one of an older ``clock.now``
    document; the current document of ``python.calculate``."""
    original = str(
        next(
            f["description"]
            for t in BUNDLED_IRRELEVANCE
            for f in t.functions
            if f["name"] == "python.calculate"
        )
    )
    save_refinement(
        Refinement("python.calculate", original, description_hash(original), [REFINED]), tools_dir
    )
    older = "Tells the time."
    save_refinement(
        Refinement("clock.now", older, description_hash(older), ["Tells the time, anywhere."]), tools_dir
    )
    return original


def shown(model: ToolCallingModel, name: str) -> set[str]:
    """Every description of the tool ``name`` (API form) the model was given."""
    return {
        t["function"]["description"] for s in model.seen for t in s["tools"] if t["function"]["name"] == name
    }


def test_refined_documents_are_what_the_model_sees_and_the_run_records_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AISEARCH_TOOLS_DIR", str(tmp_path / "tools"))
    original = store_refinements(tmp_path / "tools")
    now_document = next(
        f["description"] for t in BUNDLED_IRRELEVANCE for f in t.functions if f["name"] == "clock.now"
    )
    reply = [("", "None of these functions can do that.")]

    plain = ToolCallingModel(script=reply, seen=[])
    summary = run(options(tmp_path, run_dir=tmp_path / "original"), plain, BUNDLED_IRRELEVANCE, Scorer(None))
    assert shown(plain, "python_calculate") == {original} and summary["config"]["tool_docs"] == "original"

    tasks, docs = with_refined_documents(BUNDLED_IRRELEVANCE)
    assert docs.refined == {"python.calculate": description_hash(REFINED)} and docs.stale == ["clock.now"]
    refined_options = options(
        tmp_path, tool_docs="refined", refined_documents=docs.refined, stale_refinements=docs.stale
    )
    model = ToolCallingModel(script=reply, seen=[])
    summary = run(refined_options, model, tasks, Scorer(None))
    assert shown(model, "python_calculate") == {REFINED}, "the refined document, in every python task"
    assert shown(model, "clock_now") == {now_document}, "a refinement of another original is not shown"
    assert shown(model, "python_run_python") == shown(plain, "python_run_python"), "unrefined: unchanged"
    assert summary["n"] == 12 and summary["accuracy"] == 1.0
    config = summary["config"]
    assert config["tool_docs"] == "refined" and config["refined_documents"] == docs.refined
    assert config["stale_refinements"] == ["clock.now"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert (
        "- **tool documents**: refined, for `python.calculate`; refined from another original, not shown: `clock.now`"
        in report
    )
    python_task = next(t for t in tasks if t.functions[0]["name"].startswith("python."))
    assert REFINED in messages_for(python_task, "prompt")[0]["content"], "prompting mode shows it too"
    assert original not in messages_for(python_task, "prompt")[0]["content"]

    with pytest.raises(ValueError, match="tool_docs"):  # the same run with the original documents
        run(options(tmp_path), plain, BUNDLED_IRRELEVANCE, Scorer(None))
    assert default_run_dir(refined_options).name.endswith("refined-docs")


@pytest.mark.slow
def test_cli_sends_the_refined_documents_to_the_endpoint(tmp_path: Path) -> None:
    store_refinements(tmp_path / "tools")
    args = ("--data-dir", str(SET_DIR), "--category", "bundled_irrelevance", "--split", "all", "--n", "1")
    with fake_openai([("", "None of the functions can do that.")]) as server:
        env = cli_env(tmp_path, AISEARCH_BASE_URL=server.url, AISEARCH_TOOLS_DIR=str(tmp_path / "tools"))
        done = cli(*args, "--tool-docs", "refined", "--run", str(tmp_path / "run"), "--json", "-q", env=env)
    assert done.returncode == 0, done.stderr
    tools = {t["function"]["name"]: t["function"]["description"] for t in server.bodies[0]["tools"]}
    assert tools["python_calculate"] == REFINED
    summary = json.loads(done.stdout)
    assert summary["config"]["refined_documents"] == {"python.calculate": description_hash(REFINED)}
    assert "--tool-docs refined" in summary["config"]["command"]
    empty = cli_env(
        tmp_path, AISEARCH_BASE_URL="http://127.0.0.1:9/v1", AISEARCH_TOOLS_DIR=str(tmp_path / "none")
    )
    done = cli(*args, "--tool-docs", "refined", env=empty)
    assert (
        done.returncode == 2
        and "no stored refinement was made from these tasks' function documents" in done.stderr
    )
