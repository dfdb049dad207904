"""The role models: the output limit in the field OpenAI-compatible servers read, and their timeouts."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from models import factory
from models.config import ROLES, ModelSettings, RoleSettings, load_model_settings
from models.factory import build_chat_model
from tests.support.fake_openai import fake_openai


async def test_the_output_limit_reaches_a_compatible_server_as_max_tokens() -> None:
    with fake_openai([("Count", "1 2 3")]) as server:
        settings = ModelSettings(
            roles={role: RoleSettings(model="fake", base_url=server.url, max_tokens=200) for role in ROLES}
        )
        model = build_chat_model("executor", settings)

        await model.ainvoke([HumanMessage(content="Count to 50")])
        await model.bind(max_tokens=7).ainvoke([HumanMessage(content="Count to 50")])

    role_default, bound = server.bodies
    assert role_default["max_tokens"] == 200, "llama.cpp reads max_tokens, not max_completion_tokens"
    assert bound["max_tokens"] == 7


def test_a_streamed_reply_waits_for_its_first_chunk_as_long_as_the_role_timeout() -> None:
    # langchain-openai's own default (120 s) would cut a Writer whose long prompt a slow CPU reads
    settings = ModelSettings(
        roles={
            role: RoleSettings(model="fake", base_url="http://127.0.0.1:9/v1", timeout_s=300)
            for role in ROLES
        }
    )
    model = build_chat_model("writer", settings)
    assert model.stream_chunk_timeout == 300


async def test_the_local_executor_is_sampled_without_a_repeat_penalty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a penalty on the tokens of the prompt's own format line turned a distilled executor's calls
    # into empty lists; the prose roles keep the default their prompts were tuned with
    with fake_openai([("Count", "1 2 3")]) as server:
        monkeypatch.setattr(factory, "resolve_base_url", lambda role, settings: server.url)
        monkeypatch.setattr(factory, "local_http_clients", lambda settings: {})
        settings = load_model_settings(None, {})
        assert all(settings.role(role).is_local for role in ROLES)
        for role in ("executor", "planner"):
            await build_chat_model(role, settings).ainvoke([HumanMessage(content="Count to 3")])
        constrained = build_chat_model("executor", settings).bind(
            extra_body={"response_format": {"type": "json_object"}}
        )
        await constrained.ainvoke([HumanMessage(content="Count to 3")])

    executor, planner, schema_call = server.bodies
    assert executor["repeat_penalty"] == 1.0 and planner["repeat_penalty"] == 1.1
    assert schema_call["repeat_penalty"] == 1.0 and schema_call["response_format"] == {"type": "json_object"}
    remote = RoleSettings(model="fake", base_url="http://127.0.0.1:9/v1", repeat_penalty=1.0)
    assert remote.sent_repeat_penalty is None, "a remote endpoint gets no llama.cpp option"
