"""A second turn on the same thread sees the first (SQLite checkpointer, as the CLI uses)."""

from __future__ import annotations

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from tests.conftest import Team, run
from tests.support.fakes import MASTER, WRITER, assessment


async def test_follow_up_is_resolved_against_the_previous_turn(team: Team, hub, tmp_path) -> None:
    def master(prompt: str) -> dict:
        if "When was he born" in prompt.split("Question:")[-1]:
            assert "User: Who was Emperor Wu of Han?" in prompt
            assert "Assistant: Emperor Wu of Han was the seventh emperor" in prompt
            return assessment("simple", resolved="When was Emperor Wu of Han born?")
        return assessment("simple", resolved="Who was Emperor Wu of Han?")

    team["master"].on(MASTER, master)
    team["writer"].on("When was he born", "He was born in 156 BC.")
    team["writer"].on(WRITER, "Emperor Wu of Han was the seventh emperor of the Han dynasty.")
    resources = team.resources(hub)

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "threads.sqlite")) as saver:
        first, _, _ = await run(resources, "Who was Emperor Wu of Han?", thread="conv", checkpointer=saver)
        second, path, _ = await run(resources, "When was he born?", thread="conv", checkpointer=saver)

    assert first["answer"]["text"].startswith("Emperor Wu of Han")
    assert second["assessment"]["resolved_query"] == "When was Emperor Wu of Han born?"
    assert second["answer"]["text"] == "He was born in 156 BC."
    assert [m.type for m in second["messages"]] == ["human", "ai", "human", "ai"]
    assert path == ["master", "writer"]  # the trajectory of the second turn only
    assert "User: Who was Emperor Wu of Han?" in team["writer"].calls[2].prompt  # turn 2, answer call
