"""How both calculator engines read an expression: at most ``MAX_EXPRESSION_CHARS`` characters, the
usual symbols (``^ × · ⋅ ÷ − – √``) written as Python's, thousands separators (``1,000,000``) dropped,
then parsed into an AST, never evaluated here.

``calculate`` (``python_server.py``: Python ints and floats) and ``calculate_precise``
(``precise_calc.py``: mpmath) each walk the tree in their own way, so the two engines stay
independent while reading the same text the same way.
"""

from __future__ import annotations

import ast
import re

MAX_EXPRESSION_CHARS = 2_000
REPLACEMENTS = {"^": "**", "×": "*", "·": "*", "⋅": "*", "÷": "/", "−": "-", "–": "-", "√": "sqrt"}
THOUSANDS = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?!\d)")


def normalize(expression: str) -> str:
    """``expression`` in Python's notation: symbols replaced, thousands separators and a final ``=`` dropped."""
    text = expression.strip().rstrip("=").strip()
    for old, new in REPLACEMENTS.items():
        text = text.replace(old, new)
    return THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)


def parse_arithmetic(expression: str, error: type[ValueError]) -> ast.Expression:
    """The AST of ``expression`` (see :func:`normalize`).

    Args:
        expression: What the caller asked to calculate.
        error: The engine's own error type, raised with a clear message.

    Raises:
        error: The expression is too long, empty, or not parseable.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise error(f"expression is too long (more than {MAX_EXPRESSION_CHARS} characters)")
    text = normalize(expression)
    if not text:
        raise error("empty expression")
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise error(f"could not parse {text!r}: {exc.msg}") from None
