"""The role models send their output limit in the field OpenAI-compatible servers read."""

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
