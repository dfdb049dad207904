"""Tool input schemas as third-party MCP servers send them, made safe to read.

JSON Schema lets ``"type"`` be a list (``["string", "null"]``), a property be ``true`` and many
fields be missing; a server may also send plain junk. :func:`normalise_schema` gives what the
planner and executor read a shape they can rely on (``properties`` of dicts, each ``type`` one
known name or a list of them, ``required`` naming properties), and :func:`python_type` turns a
property into the Python type the executor validates against.
"""

from __future__ import annotations

from typing import Any

JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def _normalise_type(value: Any) -> str | list[str] | None:
    """A JSON Schema ``type``: one known name, a list of known names, or None (any)."""
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    known = list(dict.fromkeys(name for name in names if isinstance(name, str) and name in JSON_TYPES))
    if not known:
        return None
    return known[0] if len(known) == 1 else known


def _normalise_property(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}  # ``true`` or junk: any value
    prop = dict(value)
    kind = _normalise_type(prop.pop("type", None))
    if kind is not None:
        prop["type"] = kind
    return prop


def _names(kind: Any) -> list[str]:
    return [kind] if isinstance(kind, str) else list(kind or [])


def normalise_schema(schema: Any) -> dict[str, Any]:
    """An object schema whose ``properties`` are dicts with a safe ``type`` and ``required`` names."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    normal = {str(name): _normalise_property(prop) for name, prop in properties.items()}
    required = schema.get("required")
    required = [name for name in required if name in normal] if isinstance(required, list) else []
    return {**schema, "type": "object", "properties": normal, "required": required}


def type_label(prop: dict[str, Any]) -> str:
    """A property's type for prompts: ``string``, ``integer|string``, or ``any``."""
    return "|".join(_names(prop.get("type"))) or "any"


def python_type(prop: dict[str, Any]) -> Any:
    """The Python type of a normalised property (a union for a list of types, ``Any`` when open)."""
    names = _names(prop.get("type"))
    if not names:
        return Any
    kinds = [JSON_TYPES[name] for name in names]
    union = kinds[0]
    for kind in kinds[1:]:
        union = union | kind
    return union
