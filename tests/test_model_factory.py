"""The role models: the output limit in the field OpenAI-compatible servers read, and their timeouts."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from models.config import ROLES, ModelSettings, RoleSettings
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
