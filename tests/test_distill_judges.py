"""The distillation's judges and curation on hand-made teacher replies (TURA Eq. 7)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from distill.curate import curate
from distill.examples import examples_for
from distill.judges import judge_correct, judge_efficient, parse_reply
from distill.synthesize import interleaved
from evals.bfcl_calls import read_calls
from evals.bfcl_data import load_category, load_tasks
from evals.bfcl_run import messages_for
from evals.bfcl_schema import ToolSet
from evals.bfcl_score import Scorer
from evals.executor_eval import EXECUTORS, contract
from evals.executor_prompts import target_text
from tests.support.bfcl import FIXTURE_DATA, bfcl_root  # noqa: F401 - a fixture

AREA = load_category(FIXTURE_DATA, "simple_python")[0]  # geometry.triangle_area(base=10, height=5)
PARALLEL = load_category(FIXTURE_DATA, "parallel")[0]  # get_weather for Rome and Madrid
IRRELEVANT = load_category(FIXTURE_DATA, "irrelevance")[0]
GOOD = '{"thought": "The triangle tool fits.", "tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}]}'


def reply(*calls: tuple[str, dict], thought: str = "t") -> str:
    return json.dumps({"thought": thought, "tool_calls": [{"name": n, "arguments": a} for n, a in calls]})


def test_the_executor_modes_ask_for_json_and_their_replies_are_read() -> None:
    for mode in ("thought", "nothought"):
        system = messages_for(AREA, mode)[0]["content"]
        assert "geometry.triangle_area" in system and '"tool_calls"' in system
        assert ('"thought"' in system) == (mode == "thought")
    target = target_text([{"geometry.triangle_area": {"base": 10, "height": 5}}], None)
    read = read_calls(AIMessage(content=target), ToolSet(AREA.functions))
    assert read.calls == [{"geometry.triangle_area": {"base": 10, "height": 5}}]
    assert (
        read_calls(AIMessage(content='{"thought": "none fits", "tool_calls": []}'), ToolSet([])).calls == []
    )


def test_mixed_rationale_gives_a_thought_and_a_no_thought_example() -> None:
    item = {"thought": "Use it.", "calls": [{"geometry.triangle_area": {"base": 10, "height": 5}}]}
    with_thought, without = examples_for(item, AREA)
    assert (with_thought.mode, without.mode) == ("thought", "nothought")
    assert json.loads(with_thought.target)["thought"] == "Use it."
    assert "thought" not in json.loads(without.target)
    assert without.messages[-1] == AREA.messages[-1]


def test_parse_reply_takes_the_json_form_only() -> None:
    tools = ToolSet(AREA.functions)
    parsed = parse_reply("```json\n" + GOOD + "\n```", tools)
    assert parsed is not None and parsed.thought == "The triangle tool fits."
    assert parsed.calls == [{"geometry.triangle_area": {"base": 10, "height": 5}}]
    assert parse_reply("[geometry.triangle_area(base=10, height=5)]", tools) is None
    assert parse_reply('{"tool_calls": [{"arguments": {}}]}', tools) is None


@pytest.mark.parametrize(
    ("text", "stage"),
    [
        ("I would call the area tool.", "parsed"),
        (reply(("triangle_volume", {"base": 10})), "tools_exist"),
        (reply(("geometry.triangle_area", {"base": "ten", "height": 5})), "schema_valid"),
        (reply(("geometry.triangle_area", {"height": 5})), "schema_valid"),
        (reply(("geometry.triangle_area", {"base": 10, "height": 6})), "reference"),
    ],
)
def test_the_correctness_judge_names_the_first_failed_check(text: str, stage: str, bfcl_root: Path) -> None:  # noqa: F811
    judgement, _ = judge_correct(AREA, text, Scorer(bfcl_root))
    assert not judgement.passed and judgement.stage == stage


def test_the_correctness_judge_passes_right_calls_and_declines(bfcl_root: Path) -> None:  # noqa: F811
    scorer = Scorer(bfcl_root)
    assert judge_correct(AREA, GOOD, scorer)[0].passed
    assert judge_correct(IRRELEVANT, reply(), scorer)[0].passed
    assert judge_correct(IRRELEVANT, reply(("anything", {})), scorer)[0].stage == "tools_exist"


def test_the_efficiency_judge_flags_repeats_and_extra_calls() -> None:
    rome = {"get_weather": {"city": "Rome"}}
    madrid = {"get_weather": {"city": "Madrid"}}
    assert judge_efficient([rome, madrid], [rome, madrid]).passed
    assert judge_efficient([rome, rome], None).stage == "no_repeats"
    assert judge_efficient([rome, madrid, {"get_weather": {"city": "Oslo"}}], [rome, madrid]).stage == (
        "no_extra_calls"
    )
    assert judge_efficient([], None).passed


def test_curation_counts_every_stage_and_keeps_the_majority_call(tmp_path: Path, bfcl_root: Path) -> None:  # noqa: F811
    right = reply(("geometry.triangle_area", {"base": 10, "height": 5}))
    right_with_unit = reply(("geometry.triangle_area", {"base": 10, "height": 5, "unit": "units"}))
    samples = [
        (AREA.id, right_with_unit, None),
        (AREA.id, right, None),
        (AREA.id, right, None),
        (AREA.id, "not json", None),
        (AREA.id, "", "timeout after 5 s"),
        (IRRELEVANT.id, reply(), None),
        ("simple_python_9999", right, None),  # not a training task: ignored
    ]
    path = tmp_path / "trajectories.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for number, (task_id, text, failure) in enumerate(samples):
            record = {"id": f"{task_id}#{number}", "task_id": task_id, "reply": text, "failure": failure}
            handle.write(json.dumps(record) + "\n")
    tasks = {t.id: t for t in (AREA, IRRELEVANT)}
    out = tmp_path / "curated.jsonl"
    counts = curate(path, tasks, Scorer(bfcl_root), out)
    assert counts["trajectories"] == 6
    assert (counts["after_answered"], counts["after_parsed"], counts["after_reference"]) == (5, 4, 4)
    assert counts["kept"] == 2 and counts["tasks_with_a_kept_trajectory"] == 2
    kept = {row["task_id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert kept[AREA.id]["calls"] == [{"geometry.triangle_area": {"base": 10, "height": 5}}]
    assert kept[AREA.id]["votes"] == 2


def test_training_tasks_never_come_from_the_test_split() -> None:
    train = {t.id for t in load_tasks(FIXTURE_DATA, split="train")}
    held_out = {t.id for split in ("dev", "test") for t in load_tasks(FIXTURE_DATA, split=split)}
    assert train and not train & held_out


def test_the_contract_has_every_key_and_null_for_a_missing_executor() -> None:
    tasks = [AREA, IRRELEVANT]
    summary = {
        "accuracy": 0.5,
        "p80_ms": 120.0,
        "by_category": {
            "simple_python": {"accuracy": 1.0, "p80_ms": 100.0},
            "irrelevance": {"accuracy": 0.0, "p80_ms": 130.0},
        },
    }
    result = contract({"base": summary, "teacher": summary}, tasks)
    assert result["n"] == 2 and result["base_acc"] == 0.5 and result["teacher_p80_ms"] == 120.0
    for executor in EXECUTORS:
        assert f"{executor.name}_acc" in result and f"{executor.name}_p80_ms" in result
    assert result["distilled_acc"] is None and result["distilled_nothought_p80_ms"] is None
    assert result["by_category"]["simple_python"]["base_acc"] == 1.0
    assert result["by_category"]["irrelevance"]["distilled_acc"] is None
    assert result["by_category"]["irrelevance"]["n"] == 1


def test_synthesis_lets_the_categories_take_turns() -> None:
    tasks = load_tasks(FIXTURE_DATA)
    order = [t.category for t in interleaved(tasks)]
    assert sorted(order) == sorted(t.category for t in tasks)
    first_round = order[: len({t.category for t in tasks})]
    assert len(set(first_round)) == len(first_round)


def test_an_exported_distilled_file_becomes_the_executor_default(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from models.config import load_model_settings
    from models.distilled import DISTILLED_ALIAS, distilled_gguf

    monkeypatch.setenv("AISEARCH_DISTILL_DIR", str(tmp_path))
    assert load_model_settings(env={}).role("executor").model == "qwen2.5-coder-0.5b-instruct"
    path = distilled_gguf()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"GGUF")
    path.with_name(path.name + ".json").write_text("{}")
    assert load_model_settings(env={}).role("executor").model == DISTILLED_ALIAS
    assert load_model_settings(env={"AISEARCH_EXECUTOR_MODEL": "x"}).role("executor").model == "x"
    assert load_model_settings(env={}).role("writer").model == "qwen2.5-coder-1.5b-instruct"


def test_a_schema_constrained_teacher_is_asked_for_a_thought_then_the_tasks_calls(tmp_path: Path) -> None:
    import asyncio

    import jsonschema

    from distill.synthesize import SynthesisOptions, synthesize
    from tests.support.fakes import ScriptedChatModel

    task = load_tasks(FIXTURE_DATA, ("simple_python",), "all", n=1)[0]
    reply = '{"thought": "One call.", "tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}]}'
    model = ScriptedChatModel().on("triangle", reply)
    out = tmp_path / "trajectories.jsonl"

    asyncio.run(synthesize(model, [task], out, SynthesisOptions(samples=1, schema=True), teacher="t"))

    schema = model.calls[0].kwargs["response_format"]["schema"]
    assert list(schema["properties"]) == ["thought", "tool_calls"]
    jsonschema.validate(json.loads(reply), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool_calls": []}, schema)  # the thought comes first, always
    assert json.loads(out.read_text())["reply"] == reply


def test_schema_executors_are_asked_with_a_response_format(
    tmp_path: Path,
    bfcl_root: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evals.bfcl_run import BfclOptions
    from evals.executor_eval import SCHEMA_EXECUTORS, evaluate_executors, executors_for
    from models.config import load_model_settings
    from tests.test_bfcl_run import ToolCallingModel

    right = json.dumps(
        {"tool_calls": [{"name": "geometry.triangle_area", "arguments": {"base": 10, "height": 5}}]}
    )
    model = ToolCallingModel(script=[("triangle", right)], seen=[])
    monkeypatch.setattr("models.factory.build_chat_model", lambda role, settings: model)
    options = BfclOptions(categories=("simple_python",), split="all", n=1, timeout_s=5.0, command="test")
    result = asyncio.run(
        evaluate_executors(
            [AREA],
            Scorer(bfcl_root),
            load_model_settings(env={}),
            tmp_path,
            options,
            {"base": False, "teacher": False, "distilled": False, "distilled_nothought": False},
            executors=executors_for(schema=True),
        )
    )
    assert result["base_acc"] is None and result["distilled_nothought_acc"] is None
    assert result["distilled_calibrated_acc"] is None  # no decline threshold stored: not available
    measured = [executor for executor in SCHEMA_EXECUTORS if not executor.calibrated]
    for executor in measured:
        assert result[f"{executor.name}_acc"] == 1.0
        assert result["by_category"]["simple_python"][f"{executor.name}_acc"] == 1.0
    assert len(model.seen) == len(measured)
    assert all("response_format" in seen and "tools" not in seen for seen in model.seen)
    assert "base_schema_acc" not in contract({}, [AREA])  # only asked for with --schema
