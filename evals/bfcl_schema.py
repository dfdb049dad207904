"""BFCL function docs as OpenAI ``tools``: BFCL's types to JSON Schema, names an API accepts.

BFCL writes parameter types in its own vocabulary (``dict``, ``float``, ``tuple``, ``any``, and
Java/JavaScript names); an OpenAI-compatible endpoint wants JSON Schema. The mapping is BFCL's own
(``GORILLA_TO_OPENAPI`` in ``bfcl_eval/constants/type_mappings.py``): ``dict`` is ``object``,
``float`` is ``number``, ``tuple`` is ``array`` and ``any`` is ``string`` (BFCL's checker expects a
string there too). Unlike BFCL's converter this one recurses to any depth; a missing or unknown
type becomes ``string`` as in BFCL, and BFCL's non-schema ``optional`` key is dropped.

OpenAI function names match ``^[a-zA-Z0-9_-]{1,64}$``, and BFCL's have dots (``math.factorial``):
as BFCL does for such models, dots become underscores, and :class:`ToolSet` maps a called name
back to BFCL's.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

TYPE_MAP: dict[str, str] = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "dict": "object",
    "object": "object", "tuple": "array", "any": "string", "byte": "integer", "short": "integer",
    "long": "integer", "double": "number", "char": "string", "ArrayList": "array", "Array": "array",
    "HashMap": "object", "Hashtable": "object", "Queue": "array", "Stack": "array", "Any": "string",
    "String": "string", "Bigint": "integer",
}  # fmt: skip
"""BFCL's type names (Python, Java and JavaScript categories) to JSON Schema types."""

JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object"})
DROPPED_KEYS = frozenset({"optional"})
NAME_PATTERN = re.compile(r"[^a-zA-Z0-9_-]")


def convert_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """One BFCL parameter schema as JSON Schema, recursively (a new dict; the input is kept)."""
    out = {k: copy.deepcopy(v) for k, v in schema.items() if k not in DROPPED_KEYS}
    bfcl_type = schema.get("type")
    json_type = TYPE_MAP.get(bfcl_type, "string") if isinstance(bfcl_type, str) else "string"
    out["type"] = json_type
    if bfcl_type == "float" and "description" in out:
        out["description"] = f"{out['description']} This is a float type value."  # as BFCL says it
    if json_type == "object":
        if isinstance(schema.get("properties"), dict):
            out["properties"] = {k: convert_schema(v) for k, v in schema["properties"].items()}
        if isinstance(schema.get("additionalProperties"), dict):
            out["additionalProperties"] = convert_schema(schema["additionalProperties"])
    else:
        out.pop("properties", None)
    if json_type == "array":
        items = schema.get("items")
        if isinstance(items, dict):
            out["items"] = convert_schema(items)
        elif isinstance(items, list):  # a tuple's positions
            out["items"] = {"anyOf": [convert_schema(i) for i in items]} if items else {}
    else:
        out.pop("items", None)
    if "required" in out and not isinstance(out["required"], list):
        out.pop("required")
    return out


def api_name(name: str) -> str:
    """A function name an OpenAI-compatible API accepts (dots and other signs become ``_``)."""
    return NAME_PATTERN.sub("_", name)[:64] or "_"


def to_tool(function: dict[str, Any]) -> dict[str, Any]:
    """One BFCL function doc as an OpenAI tool (``{"type": "function", "function": {...}}``)."""
    parameters = function.get("parameters") or {}
    schema = convert_schema({**parameters, "type": "dict"})
    schema.setdefault("properties", {})
    return {
        "type": "function",
        "function": {
            "name": api_name(str(function["name"])),
            "description": str(function.get("description", "")),
            "parameters": schema,
        },
    }


@dataclass
class ToolSet:
    """A task's functions as OpenAI tools, and the way back from a called name to BFCL's."""

    functions: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(init=False)
    names: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.tools = [to_tool(f) for f in self.functions]
        self.names = {}
        for function in self.functions:
            original = str(function["name"])
            self.names.setdefault(original, original)
            self.names.setdefault(api_name(original), original)

    def bfcl_name(self, called: str) -> str:
        """BFCL's name for a called name (the API form, the original, or unknown: as called)."""
        called = called.strip()
        if called.startswith("functions."):  # llama.cpp's prompt names them functions.<name>
            called = called[len("functions.") :]
        return self.names.get(called, called)

    def known(self, called: str) -> bool:
        """Whether a called name is one of the task's functions."""
        return self.bfcl_name(called) in {str(f["name"]) for f in self.functions}
