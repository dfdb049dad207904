"""Scripted fake chat models: deterministic, offline, safe under parallel branches.

A :class:`ScriptedChatModel` answers by rules instead of by position, because parallel
``Send`` branches call the model in an unpredictable order. Each rule is a substring (or
predicate) of the prompt and a reply (a string or a function of the prompt). Calls are recorded
with start and end times so tests can assert concurrency.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field

Reply = str | dict[str, Any] | Callable[[str], str | dict[str, Any]]
Matcher = str | Callable[[str], bool]


@dataclass
class Call:
    """One recorded model call."""

    prompt: str  # the last message
    reply: str
    started: float
    finished: float
    conversation: str = ""  # every message of the call, joined
    kwargs: dict[str, Any] = field(
        default_factory=dict
    )  # what the call was bound with (response_format, ...)


def _joined(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


class NoRuleMatched(AssertionError):
    """The scripted model received a prompt its script does not cover."""


class ScriptedChatModel(BaseChatModel):
    """A chat model whose replies are scripted by prompt-matching rules."""

    rules: list[tuple[Any, Any]] = Field(default_factory=list)
    defaults: list[tuple[Any, Any]] = Field(default_factory=list)  # tried after every rule
    delay_s: float = 0.0
    calls: list[Call] = Field(default_factory=list)
    name_: str = "scripted"

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def on(self, match: Matcher, reply: Reply) -> ScriptedChatModel:
        """Add a rule (first matching rule wins); returns self for chaining."""
        self.rules.append((match, reply))
        return self

    def _reply(self, messages: list[BaseMessage]) -> str:
        prompt = _joined(messages)
        last = str(messages[-1].content)
        for match, reply in [*self.rules, *self.defaults]:
            hit = match(prompt) if callable(match) else match in last or match in prompt
            if hit:
                value = reply(prompt) if callable(reply) else reply
                return value if isinstance(value, str) else json.dumps(value)
        raise NoRuleMatched(f"{self.name_}: no scripted reply for prompt:\n{prompt[:1500]}")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        started = time.time()
        text = self._reply(messages)
        self.calls.append(
            Call(str(messages[-1].content), text, started, time.time(), _joined(messages), kwargs)
        )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        started = time.time()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        text = self._reply(messages)
        self.calls.append(
            Call(str(messages[-1].content), text, started, time.time(), _joined(messages), kwargs)
        )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


class StreamingScriptedChatModel(ScriptedChatModel):
    """A scripted model that streams its reply ``chunk_chars`` characters at a time, one chunk every
    ``chunk_delay_s`` (a Planner writing its plan slowly). A call's ``finished`` is its last chunk."""

    chunk_chars: int = 8
    chunk_delay_s: float = 0.02

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        started = time.time()
        text = self._reply(messages)
        for start in range(0, len(text), self.chunk_chars):
            await asyncio.sleep(self.chunk_delay_s)
            yield ChatGenerationChunk(message=AIMessageChunk(content=text[start : start + self.chunk_chars]))
        self.calls.append(
            Call(str(messages[-1].content), text, started, time.time(), _joined(messages), kwargs)
        )


DECOMPOSE = "You split a question into simple questions"
MARK = "put [square brackets] around the innermost phrase"
MASTER = "You are the Master"
PLANNER = "You are the Planner"
WRITER = "You are the Writer"
EXEC_ARGS = "JSON arguments for the tool"
EXEC_JUDGE = "Does the output achieve the task"
EXEC_COMPUTE = "Solve this sub-task"
EXEC_SUBQUERIES = "You write queries for a search engine"
EXEC_SEARCH_JUDGE = "Which results help with the task"
HOP_READ = "If the context does not say, reply: unknown"


def kept_whole(prompt: str) -> str:
    """A decomposition reply that keeps the question (the conversation's last turn) whole."""
    return "1. " + prompt.strip().splitlines()[-1]


def copied(prompt: str) -> str:
    """A marking reply that copies the question (the conversation's last turn) with nothing marked."""
    return prompt.strip().splitlines()[-1]


def assessment(
    complexity: str,
    strategy: str = "direct",
    resolved: str = "",
    intent: str = "",
    facts: list[str] | None = None,
) -> dict[str, Any]:
    """A master assessment reply."""
    return {
        "rationale": f"{complexity} query",
        "facts_to_find": facts or [],
        "resolved_query": resolved,
        "intent": intent,
        "complexity": complexity,
        "needs_external_info": complexity != "simple",
        "needs_decomposition": complexity == "complex",
        "strategy": strategy,
    }
