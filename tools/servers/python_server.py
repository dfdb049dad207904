"""MCP server "python": sandboxed Python execution and safe arithmetic.

Run alone with ``python -m tools.servers.python_server`` (stdio) or
``python -m tools.servers.python_server --transport streamable-http --port 8101`` (HTTP on loopback).
"""

from __future__ import annotations

import ast
import logging
import math
import operator
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.fastmcp import FastMCP

from tools.servers.arithmetic import parse_arithmetic
from tools.servers.common import CLOSED_WORLD, OPEN_WORLD, serve, server_arg_parser
from tools.servers.precise_calc import evaluate_precise
from tools.servers.sandbox import run_sandboxed

logger = logging.getLogger(__name__)


class CalculatorError(ValueError):
    """A clear, user-facing reason why an expression cannot be calculated."""


DEFAULT_PORT = 8101
MAX_INT_BITS = 13_000  # about 3,900 decimal digits

mcp = FastMCP(
    "python",
    instructions="Exact arithmetic (calculate, and calculate_precise on a second engine) and sandboxed Python execution (run_python) for "
    "questions that need computation: sums, differences between dates or years, unit math, "
    "statistics, counting, string processing.",
)


def _bounded_pow(base: float, exponent: float) -> float:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if exponent * math.log2(abs(base)) > MAX_INT_BITS:
            raise CalculatorError(f"result of {base} ** {exponent} is too large (more than ~3,900 digits)")
    power: float = operator.pow(base, exponent)
    return power


def _bounded_int(fn: Callable[..., Any], limit: int) -> Callable[..., Any]:
    def wrapped(*args: Any) -> Any:
        if any(isinstance(a, int) and a > limit for a in args):
            raise CalculatorError(f"{fn.__name__}() arguments above {limit} are not supported")
        return fn(*args)

    return wrapped


def _log(x: float, base: float | None = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _bounded_pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x), "exp": math.exp,
    "log": _log, "ln": math.log, "log10": math.log10, "log2": math.log2,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "degrees": math.degrees, "radians": math.radians, "hypot": math.hypot,
    "floor": math.floor, "ceil": math.ceil, "trunc": math.trunc, "abs": abs, "round": round,
    "min": min, "max": max, "pow": _bounded_pow, "gcd": math.gcd, "lcm": math.lcm,
    "factorial": _bounded_int(math.factorial, 1_000), "comb": _bounded_int(math.comb, 10_000),
    "perm": _bounded_int(math.perm, 10_000), "isqrt": math.isqrt,
}  # fmt: skip
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        result = _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
        if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
            raise CalculatorError("result is too large (more than ~3,900 digits)")
        return result
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise CalculatorError(f"unknown name {node.id!r}; {_allowed()}")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id not in _FUNCTIONS:
            raise CalculatorError(f"function {node.func.id!r} is not allowed; {_allowed()}")
        return _FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args))
    raise CalculatorError(
        f"unsupported syntax {ast.unparse(node)!r}: only numbers, + - * / // % ** (or ^), "
        f"parentheses and whitelisted math functions are allowed; use run_python for anything else"
    )


def _allowed() -> str:
    return f"allowed functions: {', '.join(sorted(_FUNCTIONS))}; constants: {', '.join(_CONSTANTS)}"


def _format_number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculatorError(f"the expression did not produce a number (got {type(value).__name__})")
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return format(value, ".15g")
    return str(value)


def evaluate_expression(expression: str) -> str:
    """Evaluate an arithmetic expression safely (by walking its AST) and return the result as text.

    Args:
        expression: Arithmetic such as ``"17 * 23 + 4"``, ``"2^10"``, ``"sqrt(2) * pi"`` or ``"1,000 ÷ 8"``.

    Returns:
        The result; integral floats are shown without ``.0`` and other floats with 15 significant digits.

    Raises:
        CalculatorError: With a clear message for anything that is not plain arithmetic, or on math errors.
    """
    tree = parse_arithmetic(expression, CalculatorError)
    try:
        return _format_number(_evaluate(tree))
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except OverflowError:
        raise CalculatorError("the result is too large to represent") from None
    except CalculatorError:
        raise
    except RecursionError:
        raise CalculatorError("the expression is nested too deeply") from None
    except (TypeError, ValueError) as exc:
        raise CalculatorError(f"math error: {exc}") from None


@mcp.tool(annotations=CLOSED_WORLD)
def calculate(expression: str) -> str:
    """Calculator: evaluate an arithmetic expression exactly and return the number.

    Use it for any arithmetic in a question instead of computing in your head: sums, differences,
    products, percentages written as arithmetic, powers, roots, logarithms, trigonometry, and
    differences between years (a span from 156 BC to 100 BC is 156 - 100).
    Supports numbers, + - * / // % ** (also ^ for power, × and ÷), parentheses, unary minus,
    thousands separators such as 1,000,000, the constants pi, e, tau, and the functions sqrt, cbrt,
    exp, log(x[, base]), ln, log10, log2, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh,
    degrees, radians, hypot, floor, ceil, trunc, abs, round, min, max, pow, gcd, lcm, factorial,
    comb, perm, isqrt. Trigonometric functions use radians.

    Example questions: "What is 17 * 23 + 4?", "How many years between 156 BC and 100 BC?",
    "What is the square root of 2 times pi?", "What is 15% of 240?" (write 240 * 15 / 100),
    "What is 2^64?".

    Args:
        expression: The arithmetic expression, e.g. "17 * 23 + 4" or "sqrt(2) * pi".
    """
    return evaluate_expression(expression)


@mcp.tool(annotations=CLOSED_WORLD)
def calculate_precise(expression: str) -> str:
    """Calculator with arbitrary precision: evaluate an arithmetic expression with mpmath at 30 digits.

    The same arithmetic as calculate (numbers, + - * / // % ** or ^, parentheses, pi, e, sqrt, log,
    trigonometry, factorial, ...) computed by an independent engine, exact for decimals such as
    0.1 + 0.2. Use it like calculate, for example for "What is 17 * 23 + 4?".

    Args:
        expression: The arithmetic expression, e.g. "17 * 23 + 4" or "sqrt(2) * pi".
    """
    return evaluate_precise(expression)


def format_run_output(stdout: str, value: str | None) -> str:
    """Combine printed output and the last expression's value the way a notebook cell shows them.

    Args:
        stdout: What the code printed.
        value: The ``repr`` of the last expression, or None.
    """
    parts = [p for p in (stdout.rstrip("\n"), value) if p]
    return "\n".join(parts) if parts else "(no output)"


@mcp.tool(annotations=OPEN_WORLD)  # code may read the clock or random numbers
async def run_python(code: str) -> str:
    """Run Python 3 code in a sandbox and return what it printed plus the value of the last expression.

    Use it for computations that need more than one arithmetic expression: loops, lists, counting,
    statistics, string processing, date arithmetic with the datetime module, checking a formula
    step by step. The code runs in a fresh, isolated process with a 5 second time limit, 256 MB of
    memory, no network access, no subprocesses, and a private temporary directory as the only
    writable place. Only the standard library (plus installed packages such as numpy, if present)
    is available. End the code with an expression to get its value back, like in a REPL, or print().

    Example questions: "What is the sum of the squares of the first 100 integers?",
    "How many days are there between 1969-07-20 and 2026-11-22?",
    "How many years between 156 BC and 100 BC?", "Which of these numbers are prime: 91, 97, 101?".

    Args:
        code: Python source code, e.g. "sum(i * i for i in range(1, 101))".
    """
    result = await anyio.to_thread.run_sync(lambda: run_sandboxed(code))
    if not result.ok:
        message = result.error or "the code failed"
        if result.stdout.strip():
            message += f"\noutput before the error:\n{result.stdout.rstrip()}"
        raise RuntimeError(message)
    return format_run_output(result.stdout, result.value)


def main(argv: list[str] | None = None) -> None:
    """Run the "python" MCP server over stdio (default) or streamable HTTP.

    Args:
        argv: Command-line arguments (defaults to ``sys.argv[1:]``).
    """
    args = server_arg_parser("MCP server 'python': run_python and calculate.", DEFAULT_PORT).parse_args(argv)
    logging.getLogger().setLevel(args.log_level)
    serve(mcp, args)


if __name__ == "__main__":
    main()
