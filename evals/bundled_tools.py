"""The bundled-tool task set: BFCL-format single-turn tasks over the bundled MCP servers' own tools.

The tasks are written by hand in ``evals/data/bundled_tools/tasks.jsonl``, one a line: ``id``
(``<category>_<n>``), the ``server`` whose tools are offered, the user's ``question`` and, unless
the category is an irrelevance one (no call is right), the possible ``answer`` as BFCL writes it:
``{"server.tool": {"param": [every acceptable value, ...]}}``, ``""`` marking an argument that may
be left out.

The functions are not written there: they are the live servers' tool specs as the hub lists them
(name ``server.tool``, the server's own description, its normalised JSON Schema), with JSON
Schema's type names in BFCL's (``object`` is ``dict``, ``number`` is ``float``; the way back is
:func:`evals.bfcl_schema.to_tool`). docsearch starts over an empty index, so the first line of its
``search`` document does not name the collections of whatever index the machine has.

``python -m evals.bundled_tools --write`` joins the two into ``BFCL_v4_<category>.json`` and
``possible_answer/BFCL_v4_<category>.json`` beside the source (what ``aisearch eval bfcl --data-dir``
reads); without ``--write`` it says whether the files on disk are what it would write.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from evals.bfcl_data import BUNDLED_TOOLS_DIR, FILE_PREFIX, is_relevance
from evals.bfcl_fetch import BfclDataError
from evals.bfcl_schema import to_tool
from evals.data_files import json_lines
from tools.hub import ToolHub, ToolSpec, original_spec
from tools.registry import DOCSEARCH, DOCSEARCH_MODULE, bundled_connections, bundled_env

log = logging.getLogger(__name__)

SET_DIR = BUNDLED_TOOLS_DIR
SOURCE = SET_DIR / "tasks.jsonl"
SERVERS: tuple[str, ...] = ("python", "clock", DOCSEARCH)
TO_BFCL = {"object": "dict", "number": "float"}
"""JSON Schema's type names that BFCL spells otherwise (its checker knows only its own)."""


def bfcl_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema with BFCL's type names, recursively (a new dict)."""
    out = dict(schema)
    if isinstance(out.get("type"), str):
        out["type"] = TO_BFCL.get(out["type"], out["type"])
    if isinstance(out.get("properties"), dict):
        out["properties"] = {key: bfcl_schema(value) for key, value in out["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), dict):
            out[key] = bfcl_schema(out[key])
    return out


def bfcl_function(spec: ToolSpec) -> dict[str, Any]:
    """One tool as a BFCL function doc: its qualified name, its own description, its parameters."""
    parameters = bfcl_schema({"properties": {}, **spec.parameters, "type": "dict"})
    parameters.setdefault("required", [])  # BFCL's checker reads it
    return {"name": spec.name, "description": spec.description, "parameters": parameters}


@asynccontextmanager
async def live_hub() -> AsyncIterator[ToolHub]:
    """A hub over the bundled servers as a run starts them; docsearch over an empty index.

    Raises:
        BfclDataError: When a server does not start.
    """
    with tempfile.TemporaryDirectory(prefix="aisearch-bundled-") as index_dir:
        connections = {name: conn for name, conn in bundled_connections().items() if name in SERVERS}
        connections[DOCSEARCH] = {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", DOCSEARCH_MODULE, "--no-default-build", "--no-warmup"],
            "env": {**bundled_env(DOCSEARCH), "AISEARCH_INDEX_DIR": index_dir},
        }
        async with ToolHub.open(connections) as hub:
            if hub.server_errors:
                raise BfclDataError(f"bundled MCP servers did not start: {hub.server_errors}")
            yield hub


def server_functions(hub: ToolHub) -> dict[str, list[dict[str, Any]]]:
    """Each server's tools as BFCL function docs, in the order it lists them, with their own
    documents (never a refined one)."""
    functions: dict[str, list[dict[str, Any]]] = {name: [] for name in SERVERS}
    for spec in hub.specs.values():
        if spec.server in functions:
            functions[spec.server].append(bfcl_function(original_spec(spec)))
    return functions


def category_of(task_id: str) -> str:
    """The category a task id names (``bundled_multiple_clock_3`` -> ``bundled_multiple_clock``)."""
    return task_id.rsplit("_", 1)[0]


def read_source(path: Path = SOURCE) -> list[dict[str, Any]]:
    """The hand-written tasks, checked for the fields each needs.

    Raises:
        BfclDataError: On a malformed line, a repeated id, an unknown server, or a missing answer.
    """
    rows: list[dict[str, Any]] = []
    for number, row in json_lines(path, BfclDataError):
        where = f"{path}:{number}"
        if not isinstance(row, dict) or not all(
            isinstance(row.get(k), str) for k in ("id", "server", "question")
        ):
            raise BfclDataError(f"{where}: each task needs an 'id', a 'server' and a 'question'")
        if row["server"] not in SERVERS:
            raise BfclDataError(f"{where}: unknown server {row['server']!r} (one of {', '.join(SERVERS)})")
        if any(row["id"] == earlier["id"] for earlier in rows):
            raise BfclDataError(f"{where}: id {row['id']!r} is used twice")
        if is_relevance(category_of(row["id"])) == ("answer" in row):
            raise BfclDataError(f"{where}: an answer is needed unless the category is a relevance one")
        rows.append(row)
    return rows


def answer_problems(functions: list[dict[str, Any]], answer: dict[str, Any]) -> list[str]:
    """What is wrong with a possible answer (``{function: {param: [values]}}``) to a task offering
    ``functions``: one call of one of them; an entry for every parameter of it (an optional one the
    request leaves open lists its default and ``""``, so that stating the default is right too), a
    required one never left out; every acceptable value valid for its parameter's JSON Schema."""
    if len(answer) != 1:
        return [f"one call expected, not {len(answer)}"]
    (name, arguments), = answer.items()  # fmt: skip
    function = next((f for f in functions if f["name"] == name), None)
    if function is None:
        return [f"{name} is not one of the offered functions"]
    schema = to_tool(function)["function"]["parameters"]
    required = schema.get("required", [])
    problems = [
        f"{name}: no answer for {param!r}" for param in schema["properties"] if param not in arguments
    ]
    for param, values in arguments.items():
        if param not in schema["properties"]:
            problems.append(f"{name}: no parameter {param!r}")
        elif not isinstance(values, list) or not values:
            problems.append(f"{name}.{param}: a non-empty list of acceptable values is expected")
        else:
            if "" in values and param in required:
                problems.append(f"{name}.{param}: required, so it may not be left out")
            validator = Draft202012Validator(schema["properties"][param])
            for value in (v for v in values if v != ""):
                problems += [f"{name}.{param}={value!r}: {e.message}" for e in validator.iter_errors(value)]
    return problems


def build_set(
    rows: list[dict[str, Any]], functions: dict[str, list[dict[str, Any]]]
) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Category -> (its question rows, its possible-answer rows), in BFCL's format.

    Raises:
        BfclDataError: When a possible answer does not fit the live functions.
    """
    built: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for row in rows:
        offered = functions[row["server"]]
        questions, answers = built.setdefault(category_of(row["id"]), ([], []))
        questions.append(
            {
                "id": row["id"],
                "question": [[{"role": "user", "content": row["question"]}]],
                "function": offered,
            }
        )
        if "answer" in row:
            problems = answer_problems(offered, row["answer"])
            if problems:
                raise BfclDataError(f"task {row['id']}: {'; '.join(problems)}")
            answers.append({"id": row["id"], "ground_truth": [row["answer"]]})
    return built


def set_files(built: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]) -> dict[Path, str]:
    """The text of every BFCL file of the set, by its path relative to the set's folder."""
    files: dict[Path, str] = {}
    for category, (questions, answers) in built.items():
        name = f"{FILE_PREFIX}{category}.json"
        files[Path(name)] = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions)
        if answers:
            files[Path("possible_answer") / name] = "".join(
                json.dumps(a, ensure_ascii=False) + "\n" for a in answers
            )
    return files


def stale_files(files: dict[Path, str], root: Path = SET_DIR) -> list[Path]:
    """The files under ``root`` that differ from ``files`` or are not among them."""
    on_disk = {p.relative_to(root) for p in root.rglob(f"{FILE_PREFIX}*.json")}
    changed = [
        path
        for path, text in files.items()
        if not (root / path).is_file() or (root / path).read_text(encoding="utf-8") != text
    ]
    return sorted({*changed, *(on_disk - set(files))})


async def current_files(source: Path = SOURCE) -> dict[Path, str]:
    """The set's files as the source and the live servers make them now."""
    rows = read_source(source)
    async with live_hub() as hub:
        functions = server_functions(hub)
    return set_files(build_set(rows, functions))


def main(argv: list[str] | None = None) -> int:
    """Check the set against the source and the live servers, or with ``--write`` rewrite it."""
    parser = argparse.ArgumentParser(prog="python -m evals.bundled_tools", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"rewrite the BFCL files under {SET_DIR}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    files = asyncio.run(current_files())
    stale = stale_files(files)
    if args.write:
        for path in stale:
            target = SET_DIR / path
            if path in files:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(files[path], encoding="utf-8")
            else:
                target.unlink()
        sys.stdout.write(f"{len(stale)} files rewritten under {SET_DIR}\n")
        return 0
    for path in stale:
        sys.stdout.write(f"stale: {path}\n")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
