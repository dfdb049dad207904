"""Trace one run of the graph: seconds per node, tokens per role, and the node trajectory.

* Seconds per node come from the ``tasks`` stream (each node's start and result, timestamped as
  they arrive); parallel ``execute_task`` branches add up, so the executor's figure is work, not
  wall time.
* Tokens per role come from a callback handler reading each chat model call's usage; the role is
  the node that made the call (``master``, ``plan`` → planner, ``execute_task`` → executor,
  ``writer``), or a fixed role for calls outside the graph (the baselines).
* The trajectory is read back from the checkpoint history (the nodes each checkpoint scheduled
  next), the way ``agentevals`` reads a LangGraph thread.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.outputs import LLMResult
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from core.run import Run, RunContext
from core.state import InputState
from graph.builder import build_graph

NODE_ROLES = {"master": "master", "plan": "planner", "execute_task": "executor", "writer": "writer"}


def usage_of(response: LLMResult) -> tuple[int, int]:
    """Prompt and completion tokens of one model response (0, 0 when the endpoint reported none)."""
    usage = (response.llm_output or {}).get("token_usage") or {}
    if usage.get("prompt_tokens") is not None:
        return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    for generations in response.generations:
        for generation in generations:
            metadata = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if metadata:
                return int(metadata.get("input_tokens", 0)), int(metadata.get("output_tokens", 0))
    return 0, 0


class TokenCounter(AsyncCallbackHandler):
    """Adds up prompt and completion tokens per role over the model calls it sees."""

    def __init__(self, role: str | None = None) -> None:
        """Count under ``role`` when given, else under the role of the graph node making the call."""
        self.role = role
        self.tokens: dict[str, dict[str, int]] = defaultdict(
            lambda: {"prompt": 0, "completion": 0, "calls": 0}
        )
        self._roles: dict[UUID, str] = {}

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember which role this call belongs to."""
        node = (metadata or {}).get("langgraph_node", "")
        self._roles[run_id] = self.role or NODE_ROLES.get(node, node or "other")

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Add the call's usage to its role."""
        role = self._roles.pop(run_id, self.role or "other")
        prompt, completion = usage_of(response)
        counts = self.tokens[role]
        counts["prompt"] += prompt
        counts["completion"] += completion
        counts["calls"] += 1

    def as_dict(self) -> dict[str, dict[str, int]]:
        """Tokens per role as plain dicts."""
        return {role: dict(counts) for role, counts in self.tokens.items()}


async def node_trajectory(graph: Any, config: RunnableConfig) -> list[str]:
    """The nodes a thread ran, in order, read from its checkpoint history."""
    history = [snapshot async for snapshot in graph.aget_state_history(config)]
    steps: list[str] = []
    for snapshot in reversed(history):
        steps.extend(name for name in snapshot.next if not name.startswith("__"))
    return steps


async def traced_run(run: Run, query: str, thread_id: str) -> dict[str, Any]:
    """Run ``query`` through the graph on a fresh in-memory thread and trace it.

    Returns:
        ``{"values", "latency_s", "node_seconds", "tokens", "trajectory"}``; exceptions propagate
        (the runner records them as the question's error).
    """
    graph = build_graph(checkpointer=InMemorySaver())
    counter = TokenCounter()
    config = RunnableConfig(configurable={"thread_id": thread_id}, recursion_limit=200, callbacks=[counter])
    started_at: dict[str, tuple[str, float]] = {}
    node_seconds: dict[str, float] = defaultdict(float)
    start = time.perf_counter()
    stream = graph.astream(InputState(query=query), config, context=RunContext(run=run), stream_mode="tasks")
    async for chunk in stream:
        now = time.perf_counter()
        if "result" in chunk or "error" in chunk:
            name, began = started_at.pop(chunk["id"], (chunk["name"], now))
            node_seconds[name] += now - began
        else:
            started_at[chunk["id"]] = (chunk["name"], now)
    latency = time.perf_counter() - start
    values = (await graph.aget_state(config)).values
    return {
        "values": values,
        "latency_s": latency,
        "node_seconds": {name: round(seconds, 3) for name, seconds in node_seconds.items()},
        "tokens": counter.as_dict(),
        "trajectory": await node_trajectory(graph, config),
    }
