"""Human in the loop through the real graph: the Master's clarifying question and the plan review
pause the run with ``interrupt`` (SQLite checkpointer, real MCP servers, scripted models); resuming
with ``Command(resume=…)`` continues it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from agents.router import cheap_route
from core.human import ReplyError, fold_answer, read_plan_decision, read_reply
from core.run import Run, RunContext
from graph.builder import build_graph
from tests.conftest import Team, make_settings, trajectory
from tests.support.fakes import EXEC_JUDGE, MASTER, PLANNER, WRITER, assessment
from tests.support.human_script import PLAN, SUM, VAGUE, WHO


@pytest.fixture
async def graph(tmp_path) -> AsyncIterator[CompiledStateGraph]:
    """The graph over a SQLite thread store, as the CLI and the HTTP app use it."""
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "threads.sqlite")) as saver:
        yield build_graph(checkpointer=saver)


CONFIG = {"configurable": {"thread_id": "h"}}


async def turn(graph: CompiledStateGraph, run: Run, value: Any) -> Any:
    """One call of the graph (a new turn, or ``Command(resume=…)``); the thread's snapshot after it."""
    await graph.ainvoke(value, CONFIG, context=RunContext(run=run))
    return await graph.aget_state(CONFIG)


def clarifying_master(prompt: str) -> dict[str, Any]:
    """The Master: asks who "he" is when it may ask; reads the clarified question as Einstein's."""
    if "Albert Einstein" in prompt.split("Question:")[-1]:
        return assessment("simple", resolved="When was Albert Einstein born?")
    reply = assessment("simple", resolved=VAGUE)
    return {**reply, "clarify": WHO} if '"clarify"' in prompt else reply


@pytest.mark.slow
async def test_an_ambiguous_question_pauses_and_the_answer_is_folded_into_the_query(
    team: Team, hub, graph
) -> None:
    team["master"].on(MASTER, clarifying_master)
    team["writer"].on("Albert Einstein", "Albert Einstein was born on 14 March 1879.")
    run = team.resources(hub, make_settings(clarify=True))

    paused = await turn(graph, run, {"query": VAGUE})

    assert paused.next == ("clarify",)
    (pending,) = paused.interrupts
    assert pending.value == {"kind": "clarification", "question": WHO, "query": VAGUE, "error": None}
    assert paused.values["clarification"]["status"] == "asked"
    assert not team["writer"].calls and "answer" not in paused.values

    done = await turn(graph, run, Command(resume="Albert Einstein"))

    assert not done.interrupts and not done.next
    values = done.values
    assert values["query"] == "When was he born? (Albert Einstein)"
    assert values["assessment"]["resolved_query"] == "When was Albert Einstein born?"
    assert values["answer"]["text"] == "Albert Einstein was born on 14 March 1879."
    assert values["clarification"] == {
        "question": WHO,
        "asked_query": VAGUE,
        "answer": "Albert Einstein",
        "status": "used",
    }
    first, second = team["master"].calls
    assert '"clarify"' in first.prompt and '"clarify"' not in second.prompt, "asked once per turn"
    assert "Albert Einstein" in team["writer"].calls[0].prompt
    assert [m.content for m in values["messages"]] == [values["query"], values["answer"]["text"]]
    assert await trajectory(graph, CONFIG) == ["master", "clarify", "master", "writer"]


@pytest.mark.slow
async def test_a_reply_that_is_not_text_is_asked_again_and_an_empty_one_keeps_the_question(
    team: Team, hub, graph
) -> None:
    team["master"].on(MASTER, clarifying_master)
    team["writer"].on(WRITER, "I cannot tell who you mean.")
    run = team.resources(hub, make_settings(clarify=True))
    await turn(graph, run, {"query": VAGUE})

    again = await turn(graph, run, Command(resume={"who": "Einstein"}))
    (pending,) = again.interrupts
    assert pending.value["question"] == WHO and "answered with text" in pending.value["error"]

    done = await turn(graph, run, Command(resume=""))
    assert done.values["query"] == VAGUE and done.values["answer"]["text"] == "I cannot tell who you mean."


@pytest.mark.slow
async def test_with_asking_off_nothing_pauses_and_the_prompt_has_no_clarify_rule(
    team: Team, hub, graph
) -> None:
    team["master"].on(MASTER, {**assessment("simple", resolved=VAGUE), "clarify": WHO})
    team["writer"].on(WRITER, "Which person do you mean?")

    done = await turn(graph, team.resources(hub), {"query": VAGUE})

    assert not done.interrupts and done.values["answer"]["text"] == "Which person do you mean?"
    assert done.values["clarification"] is None
    assert "clarify" not in team["master"].calls[0].prompt


def test_the_cheap_route_leaves_a_question_about_an_unnamed_person_to_the_llm_only_when_it_may_ask() -> None:
    query = "By how many years is he older than his brother?"
    assert cheap_route(query, has_history=False, covered=False, classifier=None) is not None
    assert cheap_route(query, has_history=False, covered=False, classifier=None, may_ask=True) is None


def planning(team: Team) -> None:
    """A Planner-route script for the sum: one task on the real python server."""
    team["master"].on(MASTER, assessment("complex", "parallel", resolved=SUM))
    team["planner"].on(PLANNER, PLAN)
    team["master"].on(
        EXEC_JUDGE, lambda p: {"sufficient": True, "result": p.split("Tool output:\n")[1].split("\n")[0]}
    )
    team["writer"].on(WRITER, lambda p: "It is 8 [1]." if "2 * 4" in p else "It is 395 [1].")


@pytest.mark.slow
async def test_plan_review_pauses_before_anything_runs_and_approve_runs_the_plan(
    team: Team, hub, graph
) -> None:
    planning(team)
    run = team.resources(hub, make_settings(review_plan=True))

    paused = await turn(graph, run, {"query": SUM})

    assert paused.next == ("review_plan",)
    (pending,) = paused.interrupts
    request = pending.value
    assert request["kind"] == "plan_review" and request["query"] == SUM and request["error"] is None
    assert [t["id"] for t in request["plan"]["tasks"]] == ["t1"] and request["waves"] == [["t1"]]
    assert "python.calculate" in request["tools"]
    assert not team["executor"].calls and not paused.values.get("results")

    done = await turn(graph, run, Command(resume="approve"))

    assert done.values["results"]["t1"]["tool_calls"][0]["output"].strip() == "395"
    assert done.values["answer"]["text"] == "It is 395 [1]."
    assert [entry["mode"] for entry in done.values["plan_log"]] == ["plan"]
    path = await trajectory(graph, CONFIG)
    assert path[:5] == ["master", "select_tools", "plan", "review_plan", "dispatch"]


@pytest.mark.slow
async def test_an_edited_plan_is_validated_and_runs_as_the_next_version(team: Team, hub, graph) -> None:
    planning(team)
    run = team.resources(hub, make_settings(review_plan=True))
    await turn(graph, run, {"query": SUM})
    edit = {
        "tasks": [
            {"id": "x1", "goal": "Compute 2 * 4", "tool": "python.calculate", "args": {"expression": "2 * 4"}}
        ]
    }

    done = await turn(graph, run, Command(resume={"action": "edit", "plan": edit}))

    values = done.values
    assert set(values["results"]) == {"x1"}
    assert values["results"]["x1"]["tool_calls"][0]["output"].strip() == "8"
    assert values["plan"]["version"] == 2
    assert [(e["version"], e["mode"]) for e in values["plan_log"]] == [(1, "plan"), (2, "edit")]
    assert values["answer"]["text"] == "It is 8 [1]."


@pytest.mark.slow
async def test_an_invalid_edit_is_asked_again_with_its_errors_and_the_plan_unchanged(
    team: Team, hub, graph
) -> None:
    planning(team)
    run = team.resources(hub, make_settings(review_plan=True))
    await turn(graph, run, {"query": SUM})
    bad = {
        "tasks": [
            {"id": "a", "goal": "First", "tool": "shell.rm", "deps": ["b"]},
            {"id": "b", "goal": "Second", "deps": ["a"]},
        ]
    }

    again = await turn(graph, run, Command(resume={"action": "edit", "plan": bad}))

    (pending,) = again.interrupts
    error = pending.value["error"]
    assert error.startswith("the edited plan is invalid:")
    assert "'shell.rm' is not among the candidate tools" in error
    assert [t["id"] for t in pending.value["plan"]["tasks"]] == ["t1"], "the current plan is shown again"
    assert again.values["plan"]["version"] == 1 and not team["executor"].calls

    unreadable = await turn(graph, run, Command(resume="maybe"))
    assert "a plan review is answered with" in unreadable.interrupts[0].value["error"]

    done = await turn(graph, run, Command(resume={"action": "approve"}))
    assert set(done.values["results"]) == {"t1"} and done.values["answer"]["text"] == "It is 395 [1]."


@pytest.mark.slow
async def test_a_rejected_plan_ends_the_turn_with_nothing_run(team: Team, hub, graph) -> None:
    planning(team)
    run = team.resources(hub, make_settings(review_plan=True))
    await turn(graph, run, {"query": SUM})

    done = await turn(graph, run, Command(resume={"action": "reject", "reason": "I will do it by hand"}))

    assert not done.next and not done.interrupts
    assert (
        done.values["answer"]["text"]
        == "The plan was rejected, so nothing was searched or run: I will do it by hand."
    )
    assert not done.values.get("results") and not team["executor"].calls and not team["writer"].calls
    assert [m.type for m in done.values["messages"]] == ["human", "ai"]


@pytest.mark.slow
async def test_without_plan_review_the_plan_runs_at_once(team: Team, hub, graph) -> None:
    planning(team)
    done = await turn(graph, team.resources(hub), {"query": SUM})
    assert not done.interrupts and done.values["answer"]["text"] == "It is 395 [1]."
    assert "review_plan" not in await trajectory(graph, CONFIG)


def test_replies_are_read_by_the_kind_of_request() -> None:
    assert read_reply({"kind": "clarification"}, {"answer": " the  physicist "}) == "the physicist"
    assert read_reply({"kind": "plan_review"}, "Approve").action == "approve"  # type: ignore[union-attr]
    with pytest.raises(ReplyError, match="needs the replacement plan"):
        read_plan_decision({"action": "edit"})
    with pytest.raises(ReplyError, match="does not know"):
        read_reply({"kind": "vote"}, "yes")
    assert fold_answer("Where is it?", "  the Louvre ") == "Where is it? (the Louvre)"
    assert fold_answer("Where is it?", "") == "Where is it?"
