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
- ``/conversations/{thread_id}``: ``/invoke`` and ``/stream`` continue a thread that exists (404
  otherwise), ``/state`` and ``/history`` read it, ``/resume`` and ``/resume/stream`` continue a
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
a run that fails sends ``error`` first. One run per thread at a time: another gets 409.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from langgraph.types import Command
from pydantic import TypeAdapter
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.background import BackgroundTask

from app.http_bodies import (
    THREAD_ID,
    BatchBody,
    InvokeBody,
    QueryInput,
    ResumeBody,
    RunConfig,
    StreamEventsBody,
)
from app.http_guard import (
    RUN_TIMEOUT_ENV,
    GuardOptions,
    LimitedBodyRoute,
    RunSlots,
    require_host,
    require_key,
)
from app.http_page import router as page_router
from app.http_service import Service, service
from app.run_setup import (
    Token,
    graph_input,
    new_thread_id,
    open_served,
    pending_requests,
    run_stream,
    thread_config,
    thread_exists,
)
from app.thread_locks import open_claims
from core.human import ReplyError, read_reply
from core.run import ModelProvider
from core.settings import Settings, load_settings
from core.state import OutputState

log = logging.getLogger(__name__)

ThreadId = Annotated[str, Path(pattern=THREAD_ID, description="A thread id, as /invoke returns it")]


def _json(value: Any) -> str:
    return json.dumps(value, default=_encodable)


def _encodable(value: Any) -> Any:
    try:
        return jsonable_encoder(value)
    except Exception:  # noqa: BLE001 - an event field with no JSON form is shown by its repr
        return repr(value)


def _failure(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"the run failed ({type(exc).__name__}{': ' + first if first else ''})"


def _config(config: RunConfig, thread_id: str, run_id: uuid.UUID) -> dict[str, Any]:
    extra: dict[str, Any] = {"run_id": run_id, "tags": config.tags, "metadata": config.metadata}
    if config.run_name:
        extra["run_name"] = config.run_name
    return thread_config(thread_id, **extra)


async def _invoke(svc: Service, value: str | Command, config: RunConfig, thread_id: str) -> dict[str, Any]:
    """One turn (or a resumed run) on ``thread_id``, held for its run; the answer with its metadata."""
    with svc.slots.hold(), svc.claims.claim(thread_id):
        return await _run(svc, value, config, thread_id)


async def _run(svc: Service, value: str | Command, config: RunConfig, thread_id: str) -> dict[str, Any]:
    """The run itself (the caller holds the thread): its output, metadata and pending requests."""
    run_id = uuid.uuid4()
    try:
        async with asyncio.timeout(svc.run_timeout_s):
            output = await svc.graph.ainvoke(
                graph_input(value),
                _config(config, thread_id, run_id),
                context=svc.context(config.configurable),
            )
    except TimeoutError:
        log.warning("run %s on thread %s passed its deadline of %.0f s", run_id, thread_id, svc.run_timeout_s)
        raise HTTPException(504, _past_deadline(svc)) from None
    except Exception as exc:  # the graph degrades on its own; this is a bug, said in one line
        log.exception("run %s on thread %s failed", run_id, thread_id)
        raise HTTPException(500, _failure(exc)) from None
    paused = [{"id": item.id, "value": item.value} for item in output.pop("__interrupt__", [])]
    metadata = {"run_id": str(run_id), "thread_id": thread_id, "feedback_tokens": []}
    return {"output": jsonable_encoder(output), "metadata": metadata, "interrupts": jsonable_encoder(paused)}


def _past_deadline(svc: Service) -> str:
    return (
        f"the run passed its deadline of {svc.run_timeout_s:g} s ({RUN_TIMEOUT_ENV}) and was stopped; "
        "the thread keeps the steps that finished"
    )


async def _resume_command(svc: Service, thread_id: str, body: ResumeBody) -> Command:
    """The ``Command`` that resumes the paused run on ``thread_id`` with the body's reply.

    Raises:
        HTTPException: 404 for an unknown thread, 409 when no run waits there, 422 for a reply that
            does not answer the pending request.
    """
    pending = await pending_requests(svc.graph, thread_config(await _existing(svc, thread_id)))
    if not pending:
        raise HTTPException(409, f"thread {thread_id!r} has no paused run to resume")
    try:
        read_reply(pending[0]["value"], body.resume)
    except ReplyError as exc:
        raise HTTPException(422, str(exc)) from None
    return Command(resume=body.resume)


def _stream(
    svc: Service,
    value: str | Command,
    run_config: RunConfig,
    thread_id: str,
    *,
    filters: dict[str, list[str]] | None = None,
    claimed: bool = False,
) -> EventSourceResponse:
    """The SSE response of one turn (or a resumed run): progress and tokens (with ``filters``:
    LangChain's v2 event stream, filtered as :class:`StreamEventsBody` asks), then the requests of
    a run that paused; ``claimed``: the caller holds the thread already."""
    try:
        svc.slots.take()  # 503 now, before the response starts
    except HTTPException:
        if claimed:
            svc.claims.release(thread_id)
        raise
    if not claimed:
        try:
            svc.claims.take(thread_id)  # 409 now, before the response starts
        except HTTPException:
            svc.slots.release()
            raise
    run_id = uuid.uuid4()
    config = _config(run_config, thread_id, run_id)
    context = svc.context(run_config.configurable)

    async def source() -> AsyncIterator[Any]:
        if filters is not None:
            stream = svc.graph.astream_events(
                graph_input(value), config, context=context, version="v2", **filters
            )
        else:
            stream = run_stream(svc.graph, value, config, context)
        async for item in stream:
            if isinstance(item, Token):
                yield {"event": "token", "text": item.text, "message_id": item.message}
            else:
                yield item
        for pending in await pending_requests(svc.graph, config):
            yield {"event": "interrupt", **pending}

    async def sse() -> AsyncIterator[ServerSentEvent]:
        yield ServerSentEvent(_json({"run_id": str(run_id), "thread_id": thread_id}), event="metadata")
        try:
            async with asyncio.timeout(svc.run_timeout_s):
                async for item in source():
                    yield ServerSentEvent(_json(item), event="data")
        except TimeoutError:
            log.warning("streamed run %s on thread %s passed its deadline", run_id, thread_id)
            yield ServerSentEvent(_json({"status_code": 504, "message": _past_deadline(svc)}), event="error")
        except Exception as exc:  # same as _invoke, on the stream: an error event, then end
            log.exception("streamed run %s on thread %s failed", run_id, thread_id)
            yield ServerSentEvent(_json({"status_code": 500, "message": _failure(exc)}), event="error")
        yield ServerSentEvent("", event="end")

    async def release() -> None:  # after the stream ends, is cancelled by a disconnect, or never starts
        svc.claims.release(thread_id)
        svc.slots.release()

    return EventSourceResponse(sse(), background=BackgroundTask(release))


async def _existing(svc: Service, thread_id: str) -> str:
    if not await thread_exists(svc.graph, thread_id):
        raise HTTPException(404, f"unknown thread id {thread_id!r}")
    return thread_id


def _same_thread(body: InvokeBody | ResumeBody, thread_id: str) -> None:
    given = body.config.configurable.thread_id
    if given is not None and given != thread_id:
        raise HTTPException(422, f"config.configurable.thread_id {given!r} is not the path's {thread_id!r}")


Svc = Annotated[Service, Depends(service)]
router = APIRouter(route_class=LimitedBodyRoute, dependencies=[Depends(require_host), Depends(require_key)])


@router.post("/invoke", summary="Answer a query (a new thread, or the one in config.configurable)")
async def invoke(body: InvokeBody, svc: Svc) -> dict[str, Any]:
    """LangServe's invoke: ``{"output": <final state>, "metadata": {"run_id", "thread_id"}}``."""
    thread_id = body.config.configurable.thread_id or new_thread_id()
    return await _invoke(svc, body.input.query, body.config, thread_id)


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
            return await _run(svc, query, config, thread)

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
    return _stream(svc, body.input.query, body.config, body.config.configurable.thread_id or new_thread_id())


@router.post("/stream_events", summary="Answer a query as LangChain's v2 event stream")
async def stream_events(body: StreamEventsBody, svc: Svc) -> EventSourceResponse:
    """Every callback event of the run (``on_chain_start``, ``on_chat_model_stream``, …) as ``data``."""
    thread_id = body.config.configurable.thread_id or new_thread_id()
    return _stream(svc, body.input.query, body.config, thread_id, filters=body.filters())


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


@router.post("/conversations/{thread_id}/invoke", summary="Continue a thread")
async def continue_thread(body: InvokeBody, thread_id: ThreadId, svc: Svc) -> dict[str, Any]:
    """The next turn of an existing thread (404 when there is none)."""
    _same_thread(body, thread_id)
    return await _invoke(svc, body.input.query, body.config, await _existing(svc, thread_id))


@router.post("/conversations/{thread_id}/stream", summary="Continue a thread as server-sent events")
async def continue_thread_stream(body: InvokeBody, thread_id: ThreadId, svc: Svc) -> EventSourceResponse:
    """``/stream`` on an existing thread (404 when there is none)."""
    _same_thread(body, thread_id)
    return _stream(svc, body.input.query, body.config, await _existing(svc, thread_id))


@router.post("/conversations/{thread_id}/resume", summary="Resume a run paused for a person")
async def resume_thread(body: ResumeBody, thread_id: ThreadId, svc: Svc) -> dict[str, Any]:
    """Answer the pending request (``interrupts`` of ``/invoke`` or ``/state``) and run on: the
    answer, or the next request (404 unknown thread, 409 nothing to resume, 422 a reply that does not fit)."""
    _same_thread(body, thread_id)
    with svc.slots.hold(), svc.claims.claim(thread_id):
        return await _run(svc, await _resume_command(svc, thread_id, body), body.config, thread_id)


@router.post("/conversations/{thread_id}/resume/stream", summary="Resume a paused run as server-sent events")
async def resume_thread_stream(body: ResumeBody, thread_id: ThreadId, svc: Svc) -> EventSourceResponse:
    """``/resume`` as ``/stream`` sends it."""
    _same_thread(body, thread_id)
    svc.claims.take(thread_id)
    try:
        command = await _resume_command(svc, thread_id, body)
    except HTTPException:
        svc.claims.release(thread_id)
        raise
    return _stream(svc, command, body.config, thread_id, claimed=True)


@router.get("/conversations/{thread_id}/state", summary="A thread's current state")
async def thread_state(thread_id: ThreadId, svc: Svc) -> dict[str, Any]:
    """The thread's values (messages, last answer, …), its next nodes, the requests of a run paused
    for a person (``interrupts``) and whether a run holds it."""
    snapshot = await svc.graph.aget_state(thread_config(await _existing(svc, thread_id)))
    return {
        "thread_id": thread_id,
        "values": jsonable_encoder(snapshot.values),
        "next": list(snapshot.next),
        "interrupts": jsonable_encoder(
            [{"id": item.id, "value": item.value} for item in snapshot.interrupts]
        ),
        "checkpoint_id": snapshot.config["configurable"].get("checkpoint_id"),
        "created_at": snapshot.created_at,
        "busy": svc.claims.held(thread_id),
    }


@router.get("/conversations/{thread_id}/history", summary="A thread's checkpoints, newest first")
async def thread_history(
    thread_id: ThreadId,
    svc: Svc,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    values: Annotated[bool, Query(description="include the state values of every checkpoint")] = False,
) -> dict[str, Any]:
    """Each checkpoint's step, source, the nodes it ran next and (``values=true``) its values."""
    config = thread_config(await _existing(svc, thread_id))
    checkpoints = []
    async for snapshot in svc.graph.aget_state_history(config, limit=limit):
        entry = {
            "checkpoint_id": snapshot.config["configurable"].get("checkpoint_id"),
            "parent_checkpoint_id": (snapshot.parent_config or {})
            .get("configurable", {})
            .get("checkpoint_id"),
            "created_at": snapshot.created_at,
            "step": snapshot.metadata.get("step") if snapshot.metadata else None,
            "source": snapshot.metadata.get("source") if snapshot.metadata else None,
            "next": list(snapshot.next),
        }
        if values:
            entry["values"] = jsonable_encoder(snapshot.values)
        checkpoints.append(entry)
    return {"thread_id": thread_id, "checkpoints": checkpoints}


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
    app.include_router(page_router)
    return app


app = create_app()
"""The app ``langgraph.json`` mounts and ``uvicorn app.http_api:app`` serves (settings from the environment)."""
