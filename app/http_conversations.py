"""The routes of an existing thread, ``/conversations/{thread_id}/…``: its next turn (whole or
streamed), a paused run resumed, its state and its checkpoints. (Not ``/threads``: mounted into
``langgraph dev`` these would shadow LangGraph Server's thread routes, which Studio uses.)"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import HTTPException, Path, Query
from fastapi.encoders import jsonable_encoder
from sse_starlette import EventSourceResponse

from app.http_bodies import THREAD_ID, InvokeBody, ResumeBody
from app.http_guard import guarded_router
from app.http_runs import existing_thread, invoke_turn, resume_command, run_turn, same_thread, stream_turn
from app.http_service import Svc
from app.run_setup import thread_config

ThreadId = Annotated[str, Path(pattern=THREAD_ID, description="A thread id, as /invoke returns it")]
router = guarded_router()


@router.post("/conversations/{thread_id}/invoke", summary="Continue a thread")
async def continue_thread(body: InvokeBody, thread_id: ThreadId, svc: Svc) -> dict[str, Any]:
    """The next turn of an existing thread (404 when there is none)."""
    same_thread(body, thread_id)
    return await invoke_turn(svc, body.input.query, body.config, await existing_thread(svc, thread_id))


@router.post("/conversations/{thread_id}/stream", summary="Continue a thread as server-sent events")
async def continue_thread_stream(body: InvokeBody, thread_id: ThreadId, svc: Svc) -> EventSourceResponse:
    """``/stream`` on an existing thread (404 when there is none)."""
    same_thread(body, thread_id)
    return stream_turn(svc, body.input.query, body.config, await existing_thread(svc, thread_id))


@router.post("/conversations/{thread_id}/resume", summary="Resume a run paused for a person")
async def resume_thread(body: ResumeBody, thread_id: ThreadId, svc: Svc) -> dict[str, Any]:
    """Answer the pending request (``interrupts`` of ``/invoke`` or ``/state``) and run on: the
    answer, or the next request (404 unknown thread, 409 nothing to resume, 422 a reply that does not fit)."""
    same_thread(body, thread_id)
    with svc.slots.hold(), svc.claims.claim(thread_id):
        return await run_turn(svc, await resume_command(svc, thread_id, body), body.config, thread_id)


@router.post("/conversations/{thread_id}/resume/stream", summary="Resume a paused run as server-sent events")
async def resume_thread_stream(body: ResumeBody, thread_id: ThreadId, svc: Svc) -> EventSourceResponse:
    """``/resume`` as ``/stream`` sends it."""
    same_thread(body, thread_id)
    svc.claims.take(thread_id)
    try:
        command = await resume_command(svc, thread_id, body)
    except HTTPException:
        svc.claims.release(thread_id)
        raise
    return stream_turn(svc, command, body.config, thread_id, claimed=True)


@router.get("/conversations/{thread_id}/state", summary="A thread's current state")
async def thread_state(thread_id: ThreadId, svc: Svc) -> dict[str, Any]:
    """The thread's values (messages, last answer, …), its next nodes, the requests of a run paused
    for a person (``interrupts``) and whether a run holds it."""
    snapshot = await svc.graph.aget_state(thread_config(await existing_thread(svc, thread_id)))
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
    config = thread_config(await existing_thread(svc, thread_id))
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
