"""The HTTP app: LangServe-style routes over the graph, with threads kept in the checkpointer.

``aisearch serve`` runs it alone (uvicorn, loopback by default); ``langgraph.json`` mounts the
module's :data:`app` into ``langgraph dev`` beside LangGraph Server's own routes. The routes:

- ``POST /invoke``, ``/batch``, ``/stream`` (SSE), ``/stream_events`` (SSE): LangServe's bodies,
  ``{"input": {"query": …}, "config": {"configurable": {"thread_id": …, …}}, "kwargs": {}}``;
  a ``thread_id`` continues that thread (or starts it under that id), none starts a new one.
- ``GET /input_schema``, ``/output_schema``, ``/config_schema``, ``/health``; OpenAPI at ``/docs``.
- ``GET /``: the search page (``app/http_page.py``); ``/?q=QUERY`` runs that search.

Every route needs the bearer token ``AISEARCH_HTTP_TOKEN`` when it is set, except ``/health``, the
search page and its assets, and FastAPI's ``/docs``, ``/redoc`` and ``/openapi.json``; every route of this app checks ``Host``
(``app/http_guard.py``).
- ``/conversations/{thread_id}`` (``app/http_conversations.py``): ``/invoke`` and ``/stream``
  continue a thread that exists (404 otherwise), ``/state`` and ``/history`` read it, ``/resume`` and ``/resume/stream`` continue a
  run paused for a person (``{"resume": reply}``; 404 unknown thread, 409 nothing paused, 422 a
  reply that does not fit the request). (Not ``/threads``: mounted into ``langgraph dev`` these
  would shadow LangGraph Server's thread routes, which Studio uses.)

A run may pause for a person when its config allows it (``clarify``, ``review_plan``; ``core/human.py``):
then ``/invoke`` answers with ``interrupts`` (``[{"id", "value"}]``, the value the question or
the plan to review) and no answer yet, ``/stream`` sends an ``interrupt`` event before ``end``,
and ``/state`` lists them until the run is resumed.

``/stream`` sends ``metadata`` (run and thread id), then ``data`` events, each a JSON object
whose ``event`` says what it is (``route``, ``tools``, ``plan``, ``task_start``, ``task_end``,
``review``, ``token``, ``answer``: ``core/events.py`` plus the Writer's tokens), then ``end``;
a run that fails sends ``error`` first. One run per thread at a time: another gets 409. How one
run is served (slot, claim, deadline, stream) is ``app/http_runs.py``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from pydantic import TypeAdapter
from sse_starlette import EventSourceResponse

from app.http_bodies import BatchBody, InvokeBody, QueryInput, RunConfig, StreamEventsBody
from app.http_conversations import router as conversations_router
from app.http_guard import GuardOptions, RunSlots, guarded_router, require_host
from app.http_page import router as page_router
from app.http_runs import invoke_turn, run_turn, stream_turn
from app.http_service import Service, Svc, service
from app.run_setup import new_thread_id, open_served
from app.thread_locks import open_claims
from core.run import ModelProvider
from core.settings import Settings, load_settings
from core.state import OutputState

router = guarded_router()


@router.post("/invoke", summary="Answer a query (a new thread, or the one in config.configurable)")
async def invoke(body: InvokeBody, svc: Svc) -> dict[str, Any]:
    """LangServe's invoke: ``{"output": <final state>, "metadata": {"run_id", "thread_id"}}``."""
    thread_id = body.config.configurable.thread_id or new_thread_id()
    return await invoke_turn(svc, body.input.query, body.config, thread_id)


@router.post("/batch", summary="Answer several queries at once, each on its own thread")
async def batch(body: BatchBody, svc: Svc) -> dict[str, Any]:
    """LangServe's batch: ``{"output": [...], "metadata": {"run_ids", "thread_ids"}}``. It takes a
    run slot per input at once (503 when they do not all fit); the runs then share the server's
    model and tool limits. When one cannot run (its thread is busy: 409) the others are cancelled
    and the batch gets its error."""
    configs = body.configs()
    threads = [c.configurable.thread_id or new_thread_id() for c in configs]

    async def one(query: str, config: RunConfig, thread: str) -> dict[str, Any]:
        with svc.claims.claim(thread):
            return await run_turn(svc, query, config, thread)

    try:
        with svc.slots.hold(len(body.inputs)):  # all of them or none: 503 before anything runs
            async with asyncio.TaskGroup() as group:
                runs = [
                    group.create_task(one(query.query, config, thread))
                    for query, config, thread in zip(body.inputs, configs, threads, strict=True)
                ]
    except* HTTPException as failed:
        raise failed.exceptions[0] from None
    done = [run.result() for run in runs]
    return {
        "output": [d["output"] for d in done],
        "metadata": {"run_ids": [d["metadata"]["run_id"] for d in done], "thread_ids": threads},
        "interrupts": [d["interrupts"] for d in done],
    }


@router.post("/stream", summary="Answer a query as server-sent events")
async def stream(body: InvokeBody, svc: Svc) -> EventSourceResponse:
    """Route, plan, tasks, re-plans, answer tokens, the final answer, then ``end``."""
    return stream_turn(
        svc, body.input.query, body.config, body.config.configurable.thread_id or new_thread_id()
    )


@router.post("/stream_events", summary="Answer a query as LangChain's v2 event stream")
async def stream_events(body: StreamEventsBody, svc: Svc) -> EventSourceResponse:
    """Every callback event of the run (``on_chain_start``, ``on_chat_model_stream``, …) as ``data``."""
    thread_id = body.config.configurable.thread_id or new_thread_id()
    return stream_turn(svc, body.input.query, body.config, thread_id, filters=body.filters())


@router.get("/input_schema", summary="JSON schema of the input")
async def input_schema() -> dict[str, Any]:
    """The schema of ``input``."""
    return QueryInput.model_json_schema()


@router.get("/output_schema", summary="JSON schema of the output")
async def output_schema() -> dict[str, Any]:
    """The schema of ``output`` (the final state a caller gets back)."""
    return TypeAdapter(OutputState).json_schema()


@router.get("/config_schema", summary="JSON schema of the config")
async def config_schema() -> dict[str, Any]:
    """The schema of ``config``: the thread id and this run's routing and budgets."""
    return RunConfig.model_json_schema()


def create_app(
    settings: Settings | None = None,
    *,
    guard: GuardOptions | None = None,
    models: ModelProvider | None = None,
    connections: dict[str, dict[str, Any]] | None = None,
) -> FastAPI:
    """The HTTP app. Nothing starts until the server runs its lifespan: then the settings are read
    (default: :func:`load_settings`), the checkpointer opens and the run (models, MCP servers) with it.

    Args:
        settings: The server's settings; each request may change its routing and budgets.
        guard: Bearer token, body limit, runs in flight and a run's deadline (default: from the
            environment, auth off).
        models: The chat model of each role (default: built from the settings).
        connections: MCP connections (default: the bundled servers and ``settings.mcp_config``,
            docsearch from the long-lived document server when it is on).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        effective = settings or load_settings()
        async with (
            open_served(effective, models=models, connections=connections) as served,
            open_claims(served.settings) as claims,
        ):
            guard_options = app.state.guard
            app.state.service = Service(
                served.settings,
                served.graph,
                served.run,
                claims,
                slots=RunSlots(guard_options.max_runs),
                run_timeout_s=guard_options.run_timeout_s,
            )
            try:
                yield
            finally:
                app.state.service = None

    app = FastAPI(
        title="aisearch",
        summary="Master, Planner, Executor and Writer agents over MCP tools, as LangServe-style routes.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.guard = guard or GuardOptions.from_env()
    app.state.service = None

    @app.get(
        "/health",
        summary="Liveness, the kind of thread store and the MCP servers (no auth)",
        dependencies=[Depends(require_host)],
    )
    async def health(request: Request) -> dict[str, Any]:
        """``ok`` once the run is open, with the thread store's kind (not where it is), each MCP
        server's state and this worker's process id and runs (``aisearch serve --workers N`` runs N
        of them on one port)."""
        svc = await service(request)
        errors = svc.run.tools.server_errors
        return {
            "status": "ok",
            "threads": "postgres" if svc.settings.db_url else "sqlite",
            "mcp_servers": {name: errors.get(name, "ok") for name in svc.run.tools.servers},
            "busy_threads": len(svc.claims.busy),
            "runs_in_flight": svc.slots.in_flight,
            "worker_pid": os.getpid(),
        }

    app.include_router(router)
    app.include_router(conversations_router)
    app.include_router(page_router)
    return app


app = create_app()
"""The app ``langgraph.json`` mounts and ``uvicorn app.http_api:app`` serves (settings from the environment)."""
