"""The REAL local server with both bundled models (marked ``local_model``; small prompts, few tokens).

The server runs from a temporary cache dir (its own state, port and log, stopped at the end), so a
server the user left running is neither reused nor disturbed; the assembled GGUFs come from the
normal cache (assembled there first if needed).
"""

from __future__ import annotations

import ast
import json
import operator
from typing import Any

import jsonschema
import pytest

try:
    import llama_cpp  # noqa: F401
except Exception as exc:  # noqa: BLE001 - any import failure means: cannot run these
    LLAMA_CPP_ERROR: str | None = f"llama-cpp-python is not importable ({exc}); run scripts/bootstrap.sh"
else:
    LLAMA_CPP_ERROR = None

from core.settings import load_settings
from models.assemble import model_path
from models.config import LocalServerSettings
from models.llama_server import binary_path

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(LLAMA_CPP_ERROR is not None, reason=LLAMA_CPP_ERROR or ""),
]

BIG, SMALL = "qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"
CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression and return the number.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. 2 * (3 + 4)"}},
            "required": ["expression"],
        },
    },
}
CALL_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "enum": ["calculator"]},
        "arguments": CALCULATOR["function"]["parameters"],
    },
    "required": ["name", "arguments"],
}
CITY_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
    "required": ["city", "country"],
}


@pytest.fixture(scope="module")
def client(local_model_server: str) -> Any:
    """An OpenAI client on the local server serving both bundled models, connecting as the roles do
    (a fresh connection per request: ``models/server_revival.py``)."""
    return local_client(local_model_server)


def local_client(base_url: str) -> Any:
    """An OpenAI client with no retries (a failure shows) and the roles' connection limits."""
    import httpx
    from openai import OpenAI

    from models.server_revival import NO_KEEPALIVE

    http = httpx.Client(limits=NO_KEEPALIVE)
    return OpenAI(base_url=base_url, api_key="local", timeout=120, max_retries=0, http_client=http)


def chat(client: Any, model: str, user: str, system: str | None = None, **kwargs: Any) -> Any:
    """One greedy chat completion."""
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": user}
    ]
    return client.chat.completions.create(model=model, messages=messages, temperature=0, **kwargs)


def arithmetic(expression: str) -> float:
    """Evaluate + - * / ( ) on numbers only."""
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError(f"not plain arithmetic: {expression!r}")

    return walk(ast.parse(expression, mode="eval").body)


def test_served_models_are_listed(client: Any) -> None:
    assert {model.id for model in client.models.list()} == {BIG, SMALL}


@pytest.mark.parametrize("alias", [BIG, SMALL])
def test_each_alias_answers(client: Any, alias: str) -> None:
    response = chat(client, alias, "What is the capital of France? Answer with one word.", max_tokens=8)
    assert "paris" in (response.choices[0].message.content or "").lower()


@pytest.mark.parametrize("alias", [BIG, SMALL])
def test_json_schema_response_format_is_schema_valid(client: Any, alias: str) -> None:
    response = chat(
        client,
        alias,
        "Name the capital of Japan and its country.",
        system="Reply in JSON.",
        max_tokens=48,
        response_format={"type": "json_object", "schema": CITY_SCHEMA},
    )
    data = json.loads(response.choices[0].message.content)
    jsonschema.validate(data, CITY_SCHEMA)
    assert "tokyo" in data["city"].lower()


def test_small_model_tool_call_json_via_schema(client: Any) -> None:
    response = chat(
        client,
        SMALL,
        "What is 17 * 23 + 4?",
        system='Call the calculator tool. Reply only with JSON: {"name": ..., "arguments": {...}}.',
        max_tokens=48,
        response_format={"type": "json_object", "schema": CALL_SCHEMA},
    )
    call = json.loads(response.choices[0].message.content)
    jsonschema.validate(call, CALL_SCHEMA)
    assert arithmetic(call["arguments"]["expression"]) == 17 * 23 + 4


def test_small_model_native_tool_call(client: Any) -> None:
    if load_settings().local.server == "llama-server":
        pytest.skip(
            "native OpenAI tool calls are llama-cpp-python's chatml-function-calling handler; with the "
            "chatml template llama-server returns them as text (the roles ask for schema-constrained JSON)"
        )
    response = chat(
        client, SMALL, "What is 17 * 23 + 4?", max_tokens=48, tools=[CALCULATOR], tool_choice="auto"
    )
    calls = response.choices[0].message.tool_calls
    assert calls, f"no tool call; content was {response.choices[0].message.content!r}"
    assert calls[0].function.name == "calculator"
    arguments = json.loads(calls[0].function.arguments)
    jsonschema.validate(arguments, CALCULATOR["function"]["parameters"])
    assert arithmetic(arguments["expression"]) == 17 * 23 + 4


def test_an_idle_server_exits_and_the_next_run_starts_it_again(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from models.local_server import ensure_server_state, stop_server
    from models.server_process import pid_alive

    binary = binary_path(load_settings(env={}))  # the user's llama-server build, before the cache moves
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "server-cache"))
    settings = load_settings(env={})
    for role in settings.roles.values():
        role.model = SMALL  # one model to load, twice
    settings.local = LocalServerSettings(
        **{
            **settings.local.model_dump(),
            "gguf": {SMALL: str(model_path(SMALL))},
            "idle_minutes": 0.05,
            "llama_server_bin": binary,
        }
    )
    try:
        first, started = ensure_server_state(settings)
        assert started
        client = local_client(first["base_url"])
        assert chat(client, SMALL, "Say OK.", max_tokens=2).choices[0].message.content
        deadline = time.monotonic() + 60
        while pid_alive(int(first["pid"])) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not pid_alive(int(first["pid"])), "3 s without a request: the server exits by itself"

        second, started_again = ensure_server_state(settings)
        assert started_again and second["pid"] != first["pid"], "the next run starts a new one"
    finally:
        stop_server(timeout_s=10)
