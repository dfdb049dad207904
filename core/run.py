"""What nodes need besides the state: settings, per-role chat models, the MCP tool hub, a clock.

Callers (the CLI, tests, the HTTP app) build a :class:`Resources` and run the graph inside
:func:`use_resources`; ``langgraph dev`` / Studio get a process-wide default built lazily from the
settings. Resources live in a context variable so that they never enter the checkpointed state
or the run configuration (chat models and MCP sessions are not serialisable).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime

from langchain_core.language_models import BaseChatModel

from core.settings import Settings, load_settings
from models.config import ROLES, Role
from tools.hub import ToolHub
from tools.registry import load_connections

ModelProvider = Callable[[Role], BaseChatModel]

_CURRENT: ContextVar[Resources | None] = ContextVar("aisearch_resources", default=None)
_DEFAULT: Resources | None = None
_DEFAULT_LOCK = asyncio.Lock()


@dataclass
class Resources:
    """Run-time dependencies of the graph's nodes."""

    settings: Settings
    models: ModelProvider
    tools: ToolHub
    now: Callable[[], datetime] = field(default=lambda: datetime.now().astimezone())
    _cache: dict[Role, BaseChatModel] = field(default_factory=dict, repr=False)

    def model(self, role: Role) -> BaseChatModel:
        """The chat model of ``role`` (built once per resources)."""
        if role not in self._cache:
            self._cache[role] = self.models(role)
        return self._cache[role]


@contextmanager
def use_resources(resources: Resources) -> Iterator[Resources]:
    """Make ``resources`` the ones graph nodes see inside this block (and the tasks it starts)."""
    token = _CURRENT.set(resources)
    try:
        yield resources
    finally:
        _CURRENT.reset(token)


async def current_resources() -> Resources:
    """The resources of the running graph; a lazily built process-wide default otherwise."""
    resources = _CURRENT.get()
    if resources is not None:
        return resources
    global _DEFAULT
    async with _DEFAULT_LOCK:
        if _DEFAULT is None:
            from models.factory import build_chat_model

            settings = load_settings()
            if any(settings.role(role).is_local for role in ROLES):
                from models.local_server import ensure_server

                await asyncio.to_thread(ensure_server, settings)  # blocking start, off the event loop
            hub = ToolHub(load_connections(settings.mcp_config))
            await hub.start()
            _DEFAULT = Resources(settings, lambda role: build_chat_model(role, settings), hub)
    return _DEFAULT
