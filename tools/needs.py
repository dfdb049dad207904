"""Which tool inputs are identifiers another tool produces (``docsearch.read(passage_id)`` reads a
passage ``docsearch.search`` found), read from the tools' own schemas and descriptions.

An input is an identifier when its name is ``id``/``ids`` or ends in ``_id``/``_ids``/``Id``/``Ids``
(``passage_id``, ``passage_ids``, ``issueId``). Its producer is a tool of the same server that takes
no identifier itself: the one the consumer's description (or the input's own description) names,
as a word or in backticks (``found by `search```), else the server's only search or list tool.
An identifier with no such producer is left alone (a user may well know an issue number).

A planner offered ``docsearch.read`` sees "needs passage_id from docsearch.search", and a plan
that reads without searching first is wired or rejected (``agents/planner.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from tools.hub import ToolSpec

_ID_NAME = re.compile(r"^(?:ids?|.+_ids?|.+[a-z0-9]Ids?)$")
_PRODUCER_WORDS = ("search", "list", "find", "query", "lookup")


def id_inputs(spec: ToolSpec) -> list[str]:
    """The inputs of ``spec`` that are identifiers, required ones first."""
    properties = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    names = [name for name in properties if _ID_NAME.match(name)]
    return sorted(names, key=lambda name: name not in required)


def _named(text: str, tool: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(tool)}(?![\w])", text) is not None


def producer_of(spec: ToolSpec, argument: str, peers: Iterable[ToolSpec]) -> str | None:
    """The tool (``server.tool``) that produces ``argument`` of ``spec``, or None."""
    others = [p for p in peers if p.server == spec.server and p.name != spec.name and not id_inputs(p)]
    if not others:
        return None
    prop = spec.parameters.get("properties", {}).get(argument, {})
    texts = [str(prop.get("description", "")), spec.description]
    for text in texts:
        named = [p for p in others if _named(text, p.name.partition(".")[2])]
        if len(named) == 1:
            return named[0].name
    searching = [
        p for p in others if any(word in p.name.partition(".")[2].lower() for word in _PRODUCER_WORDS)
    ]
    return searching[0].name if len(searching) == 1 else None


def tool_needs(spec: ToolSpec, peers: Iterable[ToolSpec]) -> dict[str, str]:
    """``{identifier input: producing tool}`` for ``spec`` (empty when it needs no produced id)."""
    peers = list(peers)
    needs = {}
    for argument in id_inputs(spec):
        producer = producer_of(spec, argument, peers)
        if producer:
            needs[argument] = producer
    return needs


def needs_text(needs: Mapping[str, str]) -> str:
    """How a candidate line says it: ``needs passage_id from docsearch.search``."""
    return "; ".join(f"needs {argument} from {producer}" for argument, producer in needs.items())
