"""A failing model endpoint degrades the run instead of ending it in a traceback (issue 11, #2).

The endpoints are real HTTP: a loopback port nothing listens on (a dead local server), and the
scripted OpenAI-compatible server rejecting long prompts the way llama.cpp does.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from core.run import Run
from models.errors import describe_model_error, is_context_overflow
from models.factory import CompatibleChatOpenAI
from models.server_process import free_port
from models.structured import ModelCallError, structured_call
from tests.conftest import FIXED_NOW, Team, make_settings, run
from tests.support.fake_openai import fake_openai
from tests.support.fakes import MASTER, assessment
from tools.hub import ToolHub

BRIDGE = "In which village was the engineer who built the Harrow Point Lighthouse born?"
ANSWER_TURN = "Answer the question from the context"


def endpoint(url: str) -> CompatibleChatOpenAI:
    """A real OpenAI-compatible client with no retries and a short timeout."""
    return CompatibleChatOpenAI(model="fake", base_url=url, api_key="x", timeout=5, max_retries=0)


def dead_url() -> str:
    """The base URL of a loopback port nothing listens on (a local model server that died)."""
    return f"http://127.0.0.1:{free_port()}/v1"


class Verdict(BaseModel):
    ok: bool


async def test_structured_call_falls_back_or_says_what_failed_when_the_endpoint_is_gone() -> None:
    model = endpoint(dead_url())
    messages = [HumanMessage(content="Is it ok?")]

    result = await structured_call(model, messages, Verdict, fallback=lambda errors: Verdict(ok=False))
    assert result.fallback and result.value == Verdict(ok=False)
    assert result.errors == ["the model endpoint dropped the connection or is not running"]

    with pytest.raises(ModelCallError, match="Verdict: the model endpoint dropped the connection"):
        await structured_call(model, messages, Verdict)


@pytest.mark.slow
async def test_a_dead_endpoint_still_ends_in_an_answer_that_says_what_failed(hotpot_hub: ToolHub) -> None:
    from datetime import datetime

    url = dead_url()
    resources = Run(
        make_settings(routing="llm", search_k=2),
        lambda role: endpoint(url),
        hotpot_hub,
        now=lambda: datetime.fromisoformat(FIXED_NOW),
    )

    state, path, _ = await run(resources, BRIDGE)

    assert path[0] == "master" and path[-1] == "writer"
    assert state["assessment"]["decided_by"] == "fallback", "the rules assessed the question"
    assert state["evidence"], "the searches ran without the model"
    answer = state["answer"]
    assert answer["short"] == ""
    assert answer["text"].startswith("No answer could be written: the model endpoint dropped the connection")
    assert any("the written answer (the model endpoint dropped" in gap for gap in answer["missing"])
    assert answer["sources"], "what was found is still listed"


@pytest.mark.slow
async def test_a_prompt_past_the_context_is_retried_with_fewer_sources(
    team: Team, hotpot_hub: ToolHub
) -> None:
    team["master"].on(MASTER, assessment("moderate", "direct", resolved=BRIDGE))
    rules = [(ANSWER_TURN, "Dunmore"), ("In one sentence", "She was born in Dunmore [1].")]
    with fake_openai(rules, max_prompt_chars=900) as server:
        resources = team.resources(hotpot_hub, make_settings(routing="llm", search_k=5))
        resources.models = lambda role: endpoint(server.url) if role == "writer" else team[role]

        state, _, _ = await run(resources, BRIDGE)

    first_turns = [b["messages"][-1]["content"] for b in server.bodies if len(b["messages"]) == 2]
    counts = [turn.count("\n\n[") + 1 for turn in first_turns if ANSWER_TURN in turn]
    assert len(counts) >= 2 and counts == sorted(counts, reverse=True) and counts[-1] < counts[0], counts
    assert len(first_turns[0]) > 900 >= len(first_turns[-1]), "rejected past the context, then it fit"
    assert state["answer"]["short"] == "Dunmore"


@pytest.mark.slow
async def test_a_failed_explanation_keeps_the_short_answer(team: Team, hotpot_hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("moderate", "direct", resolved=BRIDGE))
    # the explanation turn carries the answer turn with it: past the context, it gets HTTP 400
    with fake_openai([(ANSWER_TURN, "Dunmore")], max_prompt_chars=1000) as server:
        settings = make_settings(routing="llm", search_k=2)
        settings.writer_quotes = False  # the explanation turn is what fails here
        resources = team.resources(hotpot_hub, settings)
        resources.models = lambda role: endpoint(server.url) if role == "writer" else team[role]

        state, _, _ = await run(resources, BRIDGE)

    answer = state["answer"]
    assert answer["short"] == "Dunmore" and answer["text"] == "Dunmore"
    assert any(
        "the written answer (the model endpoint rejected the prompt" in gap for gap in answer["missing"]
    )


def test_the_error_descriptions_name_what_happened() -> None:
    import httpx
    import openai

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    overflow = openai.BadRequestError(
        "Requested tokens (5000) exceed context window of 4096",
        response=httpx.Response(400, request=request),
        body=None,
    )
    assert is_context_overflow(overflow)
    assert (
        describe_model_error(overflow) == "the model endpoint rejected the prompt as longer than its context"
    )
    assert describe_model_error(openai.APITimeoutError(request=request)) == "the model endpoint timed out"
    assert describe_model_error(TimeoutError()) == "the model endpoint timed out"
