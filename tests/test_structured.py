"""Structured output: think-stripping, JSON extraction, repair round, fallback."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from models.structured import StructuredOutputError, extract_json, strip_thinking, structured_call
from tests.support.fakes import ScriptedChatModel


class Pick(BaseModel):
    tool: str
    confidence: float


def test_extract_json_takes_the_last_object_after_reasoning_and_fences() -> None:
    text = '<think>maybe {"tool": "x"}</think>I reason first.\n```json\n{"tool": "clock", "confidence": 0.9}\n```'
    assert extract_json(text) == {"tool": "clock", "confidence": 0.9}
    assert strip_thinking("<think>unterminated") == ""
    with pytest.raises(StructuredOutputError, match="no JSON object"):
        extract_json("no json here")


def test_extract_json_reads_the_html_escaped_quotes_of_the_local_coder_models() -> None:
    # the reply of qwen2.5-coder-1.5b to the decomposer's prompt, as the local server returned it
    reply = "{&#34;tasks&#34;: [&#34;identify Nvidia stock&#34;, &#34;collect financial data&#34;]}"
    assert extract_json(reply) == {"tasks": ["identify Nvidia stock", "collect financial data"]}
    assert extract_json('{"q": "AT&amp;T"}') == {"q": "AT&amp;T"}  # valid JSON is read as written


async def test_invalid_output_gets_one_repair_round_with_the_errors() -> None:
    model = (
        ScriptedChatModel()
        .on("not valid", '{"tool": "clock", "confidence": 1}')
        .on("pick", '{"tool": "clock"}')
    )
    result = await structured_call(model, [HumanMessage(content="pick a tool")], Pick)
    assert result.value == Pick(tool="clock", confidence=1.0)
    assert result.attempts == 2 and "confidence" in result.errors[0]
    assert "confidence: Field required" in model.calls[1].prompt


async def test_fallback_after_failed_repair_or_a_clear_error_without_one() -> None:
    model = ScriptedChatModel().on("", "I cannot do that")
    result = await structured_call(
        model, [HumanMessage(content="pick")], Pick, fallback=lambda errors: Pick(tool="none", confidence=0)
    )
    assert result.fallback and result.value.tool == "none" and len(result.errors) == 2
    with pytest.raises(StructuredOutputError, match="Pick: no JSON object"):
        await structured_call(model, [HumanMessage(content="pick")], Pick)


async def test_domain_check_errors_are_repaired_too() -> None:
    model = (
        ScriptedChatModel()
        .on("not valid", '{"tool": "clock", "confidence": 0.5}')
        .on("pick", '{"tool": "clock", "confidence": 7}')
    )

    def check(value: Pick) -> Pick:
        if not 0 <= value.confidence <= 1:
            raise ValueError("confidence must be between 0 and 1")
        return value

    result = await structured_call(model, [HumanMessage(content="pick")], Pick, check=check)
    assert result.value.confidence == 0.5 and "between 0 and 1" in result.errors[0]
