"""Human in the loop over HTTP: a real ``aisearch serve`` on loopback, a real client, the scripted
endpoint. A paused run returns its question, ``/state`` shows it, ``/resume`` continues it; the
SSE stream sends an ``interrupt`` event; unknown threads and nothing to resume are 404 and 409."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.fake_openai import fake_openai
from tests.support.human_script import EINSTEIN, RULES, SUM, VAGUE, WHO
from tests.test_http_api import Served, ask, serve_env, sse_events


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server against the scripted endpoint, its threads in a temporary database."""
    root = tmp_path_factory.mktemp("serve-hitl")
    with fake_openai(RULES) as endpoint:
        server = Served(serve_env(endpoint.url, root), root / "serve.log")
        server.start()
        yield server
        server.stop()


def resume(reply: Any, **configurable: Any) -> dict[str, Any]:
    """A resume body."""
    return {"resume": reply, "config": {"configurable": configurable}}


@pytest.mark.slow
def test_a_paused_run_returns_its_question_and_resume_continues_it(served: Served) -> None:
    paused = served.post("/invoke", ask(VAGUE, clarify=True))
    assert paused.status_code == 200, paused.text
    body = paused.json()
    thread = body["metadata"]["thread_id"]
    (pending,) = body["interrupts"]
    assert pending["value"] == {"kind": "clarification", "question": WHO, "query": VAGUE, "error": None}
    assert body["output"].get("answer") is None

    state = served.get(f"/conversations/{thread}/state").json()
    assert state["next"] == ["clarify"] and state["interrupts"] == body["interrupts"]

    unfit = served.post(f"/conversations/{thread}/resume", resume({"who": "Einstein"}))
    assert unfit.status_code == 422 and "answered with text" in unfit.text

    done = served.post(f"/conversations/{thread}/resume", resume("Albert Einstein", clarify=True))
    assert done.status_code == 200, done.text
    answered = done.json()
    assert answered["interrupts"] == [] and answered["metadata"]["thread_id"] == thread
    assert answered["output"]["answer"]["text"].startswith(EINSTEIN)
    assert answered["output"]["clarification"]["answer"] == "Albert Einstein"
    assert served.get(f"/conversations/{thread}/state").json()["interrupts"] == []

    again = served.post(f"/conversations/{thread}/resume", resume("Albert Einstein"))
    assert again.status_code == 409 and "no paused run" in again.text
    unknown = served.post("/conversations/no-such-thread/resume", resume("x"))
    assert unknown.status_code == 404 and "unknown thread id 'no-such-thread'" in unknown.text
    assert served.post(f"/conversations/{thread}/resume", {"config": {}}).status_code == 422, (
        "resume is required"
    )


@pytest.mark.slow
def test_without_clarify_in_the_config_the_run_never_pauses(served: Served) -> None:
    body = served.post("/invoke", ask(VAGUE)).json()
    assert body["interrupts"] == [] and body["output"]["answer"]["text"]


@pytest.mark.slow
def test_a_batch_returns_each_runs_requests(served: Served) -> None:
    body = {
        "inputs": [{"query": VAGUE}, {"query": VAGUE}],
        "config": [{"configurable": {"clarify": True}}, {}],
    }
    response = served.post("/batch", body)
    assert response.status_code == 200, response.text
    paused, answered = response.json()["interrupts"]
    assert paused[0]["value"]["question"] == WHO and answered == []


@pytest.mark.slow
def test_plan_review_streams_an_interrupt_event_and_resume_stream_runs_the_plan(served: Served) -> None:
    with httpx.stream(
        "POST", f"{served.url}/stream", json=ask(SUM, review_plan=True), timeout=60
    ) as response:
        events = list(sse_events(response))
    assert [event for event, _ in events][-1] == "end"
    thread = events[0][1]["thread_id"]
    kinds = [data["event"] for event, data in events if event == "data"]
    assert kinds[-1] == "interrupt" and "plan" in kinds and "task_start" not in kinds, kinds
    request = events[-2][1]["value"]
    assert request["kind"] == "plan_review" and request["plan"]["tasks"][0]["tool"] == "python.calculate"

    bad_edit = {"action": "edit", "plan": {"tasks": [{"id": "t1", "goal": "x", "tool": "shell.rm"}]}}
    asked_again = served.post(f"/conversations/{thread}/resume", resume(bad_edit, review_plan=True)).json()
    (pending,) = asked_again["interrupts"]
    assert "'shell.rm' is not among the candidate tools" in pending["value"]["error"]

    with httpx.stream(
        "POST", f"{served.url}/conversations/{thread}/resume/stream", json=resume("approve"), timeout=60
    ) as response:
        assert response.status_code == 200
        resumed = list(sse_events(response))
    kinds = [data["event"] for event, data in resumed if event == "data"]
    assert "task_start" in kinds and kinds[-1] == "answer" and "interrupt" not in kinds, kinds
    assert resumed[-2][1]["answer"]["short"] == "395"
    assert served.post(f"/conversations/{thread}/resume/stream", resume("approve")).status_code == 409
