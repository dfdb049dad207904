"""BFCL tasks: the train/dev/test split, loading, and BFCL's types as JSON Schema tools."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evals.bfcl_data import DEFAULT_CATEGORIES, available_categories, load_category, load_tasks, split_of
from evals.bfcl_fetch import BfclDataError, data_dir
from evals.bfcl_schema import JSON_TYPES, TYPE_MAP, ToolSet, api_name, convert_schema, to_tool
from tests.support.bfcl import FIXTURE_DATA, bfcl_root  # noqa: F401 - a fixture

IDS = [f"{category}_{i}" for category in DEFAULT_CATEGORIES for i in range(400)]


def test_the_split_is_fixed_by_id() -> None:
    # golden values: a change of salt or shares would silently move tasks between splits
    assert [split_of(i) for i in ("simple_python_0", "simple_python_1", "parallel_multiple_0")] == [
        "train",
        "dev",
        "dev",
    ]
    assert [split_of(i) for i in IDS] == [split_of(i) for i in IDS]


def test_the_splits_are_disjoint_and_cover_every_category() -> None:
    parts = {name: {i for i in IDS if split_of(i) == name} for name in ("train", "dev", "test")}
    assert (
        not parts["train"] & parts["dev"]
        and not parts["train"] & parts["test"]
        and not parts["dev"] & parts["test"]
    )
    assert parts["train"] | parts["dev"] | parts["test"] == set(IDS)
    for category in DEFAULT_CATEGORIES:  # every category split on its own, about 60/20/20
        counts = Counter(split_of(f"{category}_{i}") for i in range(400))
        assert 200 < counts["train"] < 280 and 50 < counts["dev"] < 110 and 50 < counts["test"] < 110


def test_load_tasks_selects_the_split_and_the_first_n_of_each_category() -> None:
    every = load_tasks(FIXTURE_DATA, DEFAULT_CATEGORIES, "all")
    assert Counter(t.category for t in every) == {
        "simple_python": 4, "multiple": 1, "parallel": 1, "parallel_multiple": 1, "irrelevance": 2
    }  # fmt: skip
    assert [t.id for t in load_tasks(FIXTURE_DATA, ("simple_python",), "train")] == [
        "simple_python_0", "simple_python_2", "simple_python_3"
    ]  # fmt: skip
    one_each = load_tasks(FIXTURE_DATA, DEFAULT_CATEGORIES, "all", n=1)
    assert len(one_each) == 5 and {t.category for t in one_each} == set(DEFAULT_CATEGORIES)
    simple = one_each[0]
    assert simple.messages[0]["role"] == "user" and simple.answer and simple.functions[0]["name"]
    assert next(t for t in every if t.category == "irrelevance").answer is None


def test_unknown_or_multi_turn_categories_and_splits_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(BfclDataError, match="no BFCL category 'nonsense'.*simple_python"):
        load_category(FIXTURE_DATA, "nonsense")
    with pytest.raises(BfclDataError, match="not single-turn"):
        load_category(FIXTURE_DATA, "multi_turn_base")
    with pytest.raises(BfclDataError, match="unknown split"):
        load_tasks(FIXTURE_DATA, split="held_out")
    (tmp_path / "BFCL_v4_simple_python.json").write_text('{"id": "simple_python_0"}\n{oops\n')
    with pytest.raises(BfclDataError, match="no possible answers"):
        load_category(tmp_path, "simple_python")
    assert "irrelevance" in available_categories(FIXTURE_DATA)


def _types(schema: dict) -> list[str]:
    found = [schema["type"]] if "type" in schema else []
    for value in schema.get("properties", {}).values():
        found += _types(value)
    if isinstance(schema.get("items"), dict):
        found += _types(schema["items"])
    return found


def test_every_bfcl_type_becomes_json_schema() -> None:
    every = load_category(FIXTURE_DATA, "simple_python")[3].functions[0]
    tool = to_tool(every)
    parameters = tool["function"]["parameters"]
    props = parameters["properties"]
    assert parameters["type"] == "object" and parameters["required"] == ["s", "i"]
    assert props["f"]["type"] == "number" and "float" in props["f"]["description"]
    assert props["a"] == {"type": "array", "items": {"type": "number"}, "description": "A list of floats."}
    assert props["t"]["type"] == "array" and props["t"]["items"]["type"] == "integer"
    assert props["x"]["type"] == "string" and props["untyped"]["type"] == "string"  # BFCL: any/none -> string
    assert props["d"]["properties"]["inner"]["properties"]["deep"] == {
        "type": "array",
        "items": {"type": "string"},
    }
    assert props["d"]["properties"]["rows"]["items"]["properties"]["v"]["type"] == "number"
    assert props["aa"]["items"]["items"]["type"] == "object"
    assert (
        "optional" not in props["maybe"] and props["s"]["enum"] == ["a", "b"] and props["i"]["default"] == 3
    )
    assert set(_types(parameters)) <= JSON_TYPES
    assert every["parameters"]["properties"]["f"]["type"] == "float", "the BFCL doc is left as it was"
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft7Validator.check_schema(parameters)
    assert set(TYPE_MAP.values()) <= JSON_TYPES
    assert convert_schema({"type": "mystery"})["type"] == "string"


def test_dotted_names_go_out_with_underscores_and_come_back() -> None:
    tools = ToolSet(load_category(FIXTURE_DATA, "multiple")[0].functions)
    assert [t["function"]["name"] for t in tools.tools] == ["geometry_triangle_area", "get_weather"]
    assert tools.bfcl_name("geometry_triangle_area") == "geometry.triangle_area"
    assert tools.bfcl_name("functions.geometry.triangle_area") == "geometry.triangle_area"
    assert tools.bfcl_name("made_up") == "made_up" and not tools.known("made_up")
    assert api_name("a.b c/d") == "a_b_c_d"


@pytest.mark.slow
def test_every_schema_of_the_real_data_converts(bfcl_root: Path) -> None:  # noqa: F811
    jsonschema = pytest.importorskip("jsonschema")
    seen: set[str] = set()
    for category in (*DEFAULT_CATEGORIES, "live_simple", "live_multiple", "live_irrelevance"):
        for task in load_category(data_dir(bfcl_root), category):
            for tool in ToolSet(task.functions).tools:
                parameters = tool["function"]["parameters"]
                key = json.dumps(parameters, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    jsonschema.Draft7Validator.check_schema(parameters)
                    assert set(_types(parameters)) <= JSON_TYPES
    assert len(seen) > 1000
