"""The "python" MCP server, run as a real stdio subprocess, plus the calculator in-process."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

from tools.registry import bundled_connections
from tools.servers.python_server import CalculatorError, evaluate_expression, format_run_output

REPO_ROOT = Path(__file__).resolve().parents[1]


def _client() -> MultiServerMCPClient:
    return MultiServerMCPClient(
        {
            "python": {
                "command": sys.executable,
                "args": ["-m", "tools.servers.python_server"],
                "transport": "stdio",
                "cwd": str(REPO_ROOT),
                "env": dict(os.environ),
            }
        }
    )


def _text(content: object) -> str:
    """The text of a LangChain tool result (a string or a list of content blocks)."""
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block.get("type") == "text")


async def test_tools_are_listed_with_rich_descriptions_and_work() -> None:
    async with _client().session("python") as session:
        tools = {tool.name: tool for tool in await load_mcp_tools(session)}
        assert set(tools) == {"run_python", "calculate", "calculate_precise"}
        assert "What is 17 * 23 + 4?" in tools["calculate"].description
        assert "156 BC" in tools["run_python"].description
        assert set(tools["calculate"].args) == {"expression"}
        assert set(tools["run_python"].args) == {"code"}

        assert _text(await tools["calculate"].ainvoke({"expression": "17 * 23 + 4"})) == "395"
        assert _text(await tools["calculate"].ainvoke({"expression": "2^10 + 1,000 × 2"})) == "3024"
        output = await tools["run_python"].ainvoke(
            {"code": "print('sum of squares')\nsum(i * i for i in range(101))"}
        )
        assert _text(output) == "sum of squares\n338350"


async def test_errors_come_back_as_error_results() -> None:
    async with _client().session("python") as session:
        result = await session.call_tool(
            "run_python", {"code": "import socket\nsocket.create_connection(('127.0.0.1', 9))"}
        )
        assert result.isError
        assert "network access is disabled in the sandbox" in result.content[0].text

        result = await session.call_tool("run_python", {"code": "print('step 1')\n1 / 0"})
        assert result.isError
        text = result.content[0].text
        assert "ZeroDivisionError: division by zero (line 2)" in text
        assert "step 1" in text and "Traceback" not in text

        result = await session.call_tool("calculate", {"expression": "__import__('os')"})
        assert result.isError
        assert "function '__import__' is not allowed" in result.content[0].text

        result = await session.call_tool("calculate", {"expression": "1 / 0"})
        assert result.isError and "division by zero" in result.content[0].text


def _server_environments() -> list[str]:
    """The environments of the running python MCP servers started from this test process."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if b"tools.servers.python_server" in (entry / "cmdline").read_bytes():
                found.append((entry / "environ").read_bytes().decode("utf-8", "replace"))
        except OSError:
            continue
    return found


async def test_the_bundled_server_holds_no_key_and_its_code_sees_none(monkeypatch) -> None:
    """End to end: the key in aisearch's environment reaches neither the server nor the code."""
    monkeypatch.setenv("AISEARCH_API_KEY", "sk-end-to-end-7c1")
    monkeypatch.setenv("AISEARCH_WRITER_API_KEY", "sk-end-to-end-7c1")
    client = MultiServerMCPClient({"python": bundled_connections()["python"]})
    async with client.session("python") as session:
        code = (
            "import os\n"
            "hits = []\n"
            "for pid in os.listdir('/proc'):\n"
            "    try:\n"
            "        if b'sk-end-to-end' in open(f'/proc/{pid}/environ', 'rb').read():\n"
            "            hits.append(pid)\n"
            "    except OSError:\n"
            "        pass\n"
            "hits, [key for key in os.environ if key.startswith('AISEARCH')]"
        )
        result = await session.call_tool("run_python", {"code": code})
        assert not result.isError, result.content[0].text
        assert result.content[0].text == "([], [])"
        environments = _server_environments()
        assert environments and not any("sk-end-to-end" in env for env in environments)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("17 * 23 + 4", "395"),
        ("156 - 100", "56"),
        ("2^10", "1024"),
        ("1,000,000 ÷ 8", "125000"),
        ("3 × (4 − 1)", "9"),
        ("-(3 + 4) ** 2", "-49"),
        ("7 // 2 + 7 % 2", "4"),
        ("0.1 + 0.2", "0.3"),
        ("10 / 4", "2.5"),
        ("sqrt(16) + log(8, 2) + abs(-1)", "8"),
        ("round(pi, 4)", "3.1416"),
        ("max(3, 5) + min(2, 9)", "7"),
        ("2**64", "18446744073709551616"),
        ("17 * 23 + 4 =", "395"),
    ],
)
def test_calculator_accepts_arithmetic(expression: str, expected: str) -> None:
    assert evaluate_expression(expression) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("x + 1", "unknown name 'x'"),
        ("open('/etc/passwd')", "function 'open' is not allowed"),
        ("(1).__class__", "unsupported syntax"),
        ("'a' * 3", "unsupported syntax"),
        ("2 ** 100000", "too large"),
        ("9 ** 9 ** 9", "too large"),
        ("factorial(10**6)", "arguments above 1000"),
        ("sqrt(-1)", "math error"),
        ("1 +", "could not parse"),
        ("", "empty expression"),
    ],
)
def test_calculator_rejects_everything_else(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError, match=re.escape(message)):
        evaluate_expression(expression)


def test_run_output_format() -> None:
    assert format_run_output("a\n", "1") == "a\n1"
    assert format_run_output("", None) == "(no output)"
    assert format_run_output("", "'x'") == "'x'"


def test_the_precise_calculator_agrees_with_calculate() -> None:
    from tools.servers.precise_calc import PreciseCalcError, evaluate_precise
    from tools.servers.python_server import evaluate_expression

    for expression in ["17 * 23 + 4", "2^64", "240 * 15 / 100", "-7 % 3", "7 // 2", "156 - 100", "log(8, 2)"]:
        assert evaluate_precise(expression) == evaluate_expression(expression), expression
    # both read the text the same way: symbols, and thousands separators beside a call's commas
    for expression in ["3 ⋅ 4", "max(1,000, 2) + 1", "1,000,000 ÷ 8 ="]:
        assert evaluate_precise(expression) == evaluate_expression(expression), expression
    assert evaluate_precise("0.1 + 0.2") == "0.3"
    with pytest.raises(PreciseCalcError, match="not allowed"):
        evaluate_precise("__import__('os')")
