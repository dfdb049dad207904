"""The HTTP app's running service: what its routes share for the life of the server.

Its own module (not ``app/http_api.py``): ``langgraph dev`` loads the app's file under a module
name that is not in ``sys.modules``, where a dataclass cannot be defined.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, HTTPException, Request

from app.http_bodies import Configurable
from app.http_guard import DEFAULT_MAX_RUNS, DEFAULT_RUN_TIMEOUT_S, RunSlots, ThreadClaims
from core.run import Run, RunContext
from core.settings import Settings

if TYPE_CHECKING:
    from graph.builder import SearchGraph


@dataclass
class Service:
    """What the routes share for the life of the server: settings, the graph, the open run, the
    threads' claims, the run slots and a run's deadline."""

    settings: Settings
    graph: SearchGraph
    run: Run
    claims: ThreadClaims
    slots: RunSlots = field(default_factory=lambda: RunSlots(DEFAULT_MAX_RUNS))
    run_timeout_s: float = DEFAULT_RUN_TIMEOUT_S

    def context(self, configurable: Configurable) -> RunContext:
        """The run context of one request: the server's run, with this request's settings if it has any."""
        settings = configurable.apply(self.settings)
        if settings is self.settings:
            return RunContext(run=self.run)
        return RunContext(run=replace(self.run, settings=settings))  # the same models, tools and caches


async def service(request: Request) -> Service:
    """The running service (503 while the server starts)."""
    found: Service | None = getattr(request.app.state, "service", None)
    if found is None:
        raise HTTPException(503, "the server is starting")
    return found


Svc = Annotated[Service, Depends(service)]
"""A route's parameter that receives the running service."""
