"""A second calculator engine: arbitrary-precision arithmetic with mpmath.

The ``python`` server's ``calculate`` walks the expression's AST with Python floats and ints; this
engine walks the same kind of AST with mpmath numbers at ``DIGITS`` significant digits, so the two
tools are genuinely equivalent yet independent (a bug or a fault in one's arithmetic is not in the
other's); both read the text the same way (``arithmetic.py``). The
executor switches to one when the other fails (``agents/executor_backup.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import mpmath

from tools.servers.arithmetic import parse_arithmetic

DIGITS = 30
MAX_EXPONENT = 10_000
_CONTEXT = mpmath.mp.clone() if hasattr(mpmath.mp, "clone") else mpmath.MPContext()
_CONTEXT.dps = DIGITS


class PreciseCalcError(ValueError):
    """A clear reason why an expression cannot be calculated."""


def _pow(base: Any, exponent: Any) -> Any:
    if abs(exponent) > MAX_EXPONENT:
        raise PreciseCalcError(f"exponent {exponent} is too large (at most {MAX_EXPONENT})")
    return base**exponent


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: _CONTEXT.floor(a / b),
    ast.Mod: lambda a, b: a - b * _CONTEXT.floor(a / b),
    ast.Pow: _pow,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": _CONTEXT.sqrt, "cbrt": _CONTEXT.cbrt, "exp": _CONTEXT.exp, "ln": _CONTEXT.ln,
    "log": lambda x, b=None: _CONTEXT.log(x) if b is None else _CONTEXT.log(x, b),
    "log10": _CONTEXT.log10, "log2": lambda x: _CONTEXT.log(x, 2),
    "sin": _CONTEXT.sin, "cos": _CONTEXT.cos, "tan": _CONTEXT.tan, "asin": _CONTEXT.asin,
    "acos": _CONTEXT.acos, "atan": _CONTEXT.atan, "atan2": _CONTEXT.atan2, "sinh": _CONTEXT.sinh,
    "cosh": _CONTEXT.cosh, "tanh": _CONTEXT.tanh, "degrees": _CONTEXT.degrees, "radians": _CONTEXT.radians,
    "hypot": _CONTEXT.hypot, "floor": _CONTEXT.floor, "ceil": _CONTEXT.ceil, "abs": abs,
    "round": lambda x: _CONTEXT.nint(x), "min": min, "max": max, "pow": _pow,
    "factorial": lambda n: _CONTEXT.factorial(n) if n <= 1_000 else _too_large("factorial"),
}  # fmt: skip
_CONSTANTS = {"pi": _CONTEXT.pi, "e": _CONTEXT.e, "tau": 2 * _CONTEXT.pi}


def _too_large(name: str) -> Any:
    raise PreciseCalcError(f"{name}() arguments above 1000 are not supported")


def _number(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _number(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _CONTEXT.mpf(repr(node.value)) if isinstance(node.value, float) else _CONTEXT.mpf(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_number(node.left), _number(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _number(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id not in _FUNCTIONS:
            raise PreciseCalcError(
                f"function {node.func.id!r} is not allowed; allowed: {', '.join(sorted(_FUNCTIONS))}"
            )
        return _FUNCTIONS[node.func.id](*(_number(arg) for arg in node.args))
    raise PreciseCalcError(
        f"unsupported syntax {ast.unparse(node)!r}: only numbers, operators and math functions"
    )


def _format(value: Any) -> str:
    if isinstance(value, _CONTEXT.mpc):
        raise PreciseCalcError("the result is a complex number")
    if _CONTEXT.isinf(value) or _CONTEXT.isnan(value):
        raise PreciseCalcError("the result is not a finite number")
    if value == _CONTEXT.nint(value) and abs(value) < _CONTEXT.mpf(10) ** DIGITS:
        return str(int(value))
    text: str = _CONTEXT.nstr(value, 15)
    return text


def evaluate_precise(expression: str) -> str:
    """Evaluate arithmetic at ``DIGITS`` significant digits; integral results print as integers.

    Raises:
        PreciseCalcError: With a clear message for anything that is not plain arithmetic.
    """
    tree = parse_arithmetic(expression, PreciseCalcError)
    try:
        return _format(_number(tree))
    except ZeroDivisionError:
        raise PreciseCalcError("division by zero") from None
    except RecursionError:
        raise PreciseCalcError("the expression is nested too deeply") from None
    except PreciseCalcError:
        raise
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise PreciseCalcError(f"math error: {exc}") from None
