"""One run over HTTP: a turn answered whole or streamed as server-sent events, a paused run resumed;
each holds a run slot and its thread's claim, runs within its deadline, and a failure is one line.
The routes (``app/http_api.py``, ``app/http_conversations.py``) call these."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import HTTPException
from fastapi.encoders import jsonable_encoder
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.background import BackgroundTask

from app.http_bodies import InvokeBody, ResumeBody, RunConfig
from app.http_guard import RUN_TIMEOUT_ENV
from app.http_service import Service
from app.run_setup import Token, graph_input, pending_requests, run_stream, thread_config, thread_exists
from core.human import ReplyError, read_reply

log = logging.getLogger(__name__)


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


def _config(config: RunConfig, thread_id: str, run_id: uuid.UUID) -> RunnableConfig:
    run = thread_config(thread_id)
    run["run_id"] = run_id
    run["tags"] = config.tags
    run["metadata"] = config.metadata
    if config.run_name:
        run["run_name"] = config.run_name
    return run


async def invoke_turn(
    svc: Service, value: str | Command[Any], config: RunConfig, thread_id: str
) -> dict[str, Any]:
    """One turn (or a resumed run) on ``thread_id``, held for its run; the answer with its metadata."""
    with svc.slots.hold(), svc.claims.claim(thread_id):
        return await run_turn(svc, value, config, thread_id)


async def run_turn(
    svc: Service, value: str | Command[Any], config: RunConfig, thread_id: str
) -> dict[str, Any]:
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


async def resume_command(svc: Service, thread_id: str, body: ResumeBody) -> Command[Any]:
    """The ``Command`` that resumes the paused run on ``thread_id`` with the body's reply.

    Raises:
        HTTPException: 404 for an unknown thread, 409 when no run waits there, 422 for a reply that
            does not answer the pending request.
    """
    pending = await pending_requests(svc.graph, thread_config(await existing_thread(svc, thread_id)))
    if not pending:
        raise HTTPException(409, f"thread {thread_id!r} has no paused run to resume")
    try:
        read_reply(pending[0]["value"], body.resume)
    except ReplyError as exc:
        raise HTTPException(422, str(exc)) from None
    return Command(resume=body.resume)


def stream_turn(
    svc: Service,
    value: str | Command[Any],
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
        stream: AsyncIterator[Any]
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
        except Exception as exc:  # same as invoke_turn, on the stream: an error event, then end
            log.exception("streamed run %s on thread %s failed", run_id, thread_id)
            yield ServerSentEvent(_json({"status_code": 500, "message": _failure(exc)}), event="error")
        yield ServerSentEvent("", event="end")

    async def release() -> None:  # after the stream ends, is cancelled by a disconnect, or never starts
        svc.claims.release(thread_id)
        svc.slots.release()

    return EventSourceResponse(sse(), background=BackgroundTask(release))


async def existing_thread(svc: Service, thread_id: str) -> str:
    if not await thread_exists(svc.graph, thread_id):
        raise HTTPException(404, f"unknown thread id {thread_id!r}")
    return thread_id


def same_thread(body: InvokeBody | ResumeBody, thread_id: str) -> None:
    given = body.config.configurable.thread_id
    if given is not None and given != thread_id:
        raise HTTPException(422, f"config.configurable.thread_id {given!r} is not the path's {thread_id!r}")
