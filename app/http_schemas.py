"""JSON schemas of the graph's output for ``GET /output_schema``.

The state's records are ``typing.TypedDict`` classes, which pydantic refuses on Python < 3.12
(``graph.get_output_jsonschema()`` raises there); :func:`typed_dict_schema` rebuilds them as
``typing_extensions.TypedDict`` with the same fields, required keys and docstrings first.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any

import typing_extensions
from pydantic import TypeAdapter


def _portable(tp: Any) -> Any:
    """``tp`` with every ``typing.TypedDict`` in it replaced by a ``typing_extensions`` one."""
    if typing_extensions.is_typeddict(tp):
        return _rebuild(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return typing.Annotated[(_portable(args[0]), *tp.__metadata__)]
    if not args or origin is typing.Literal:
        return tp
    if origin is typing.Union or origin is types.UnionType:
        return functools.reduce(lambda a, b: a | b, (_portable(a) for a in args))
    return origin[tuple(_portable(a) for a in args)] if len(args) > 1 else origin[_portable(args[0])]


@functools.cache
def _rebuild(cls: type) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {
        name: _portable(tp) if name in cls.__required_keys__ else typing_extensions.NotRequired[_portable(tp)]
        for name, tp in hints.items()
    }
    rebuilt = typing_extensions.TypedDict(cls.__name__, fields, total=True)  # type: ignore[operator]
    rebuilt.__doc__ = cls.__doc__
    return rebuilt


def typed_dict_schema(cls: type) -> dict[str, Any]:
    """The JSON schema of the ``TypedDict`` ``cls`` (a ``typing`` one works on Python 3.11 too)."""
    return TypeAdapter(_portable(cls)).json_schema()
