"""The tool-call cache: an identical call of a read-only, closed-world tool is answered from an
earlier one within its time to live, over the same documents; the clock and code never are."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.run import Run
from tests.conftest import Team, make_settings
from tools.cache.tool_calls import ToolCacheLimits, ToolCallCache, call_key
from tools.hub import ToolHub, ToolOutcome


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def outcome(expression: str, output: str, ok: bool = True) -> ToolOutcome:
    return ToolOutcome(
        "python.calculate", {"expression": expression}, ok, output if ok else "", None if ok else output
    )


def test_a_call_is_served_within_its_time_to_live_and_not_after(tmp_path: Path) -> None:
    clock = Clock()
    cache = ToolCallCache(tmp_path / "tools.sqlite", ToolCacheLimits(ttl_s=60), clock=clock)
    cache.put(outcome("2+2", "4"), "corpus")

    clock.now += 59
    hit = cache.get("python.calculate", {"expression": "2+2"}, "corpus")
    assert hit is not None and hit.cached and hit.ok and hit.output == "4"
    clock.now += 2
    assert cache.get("python.calculate", {"expression": "2+2"}, "corpus") is None
    assert cache.size() == 0, "an expired entry is dropped when it is found"


def test_the_key_is_the_tool_the_canonical_arguments_and_the_documents() -> None:
    assert call_key("s.t", {"a": 1, "b": [1, 2]}, "c") == call_key("s.t", {"b": [1, 2], "a": 1}, "c")
    assert call_key("s.t", {"a": 1}, "c") != call_key("s.t", {"a": 2}, "c")
    assert call_key("s.t", {"a": 1}, "c") != call_key("s.u", {"a": 1}, "c")
    assert call_key("s.t", {"a": 1}, "c") != call_key("s.t", {"a": 1}, "after-reindex")


def test_failures_are_not_kept_and_the_size_is_bounded(tmp_path: Path) -> None:
    clock = Clock()
    cache = ToolCallCache(tmp_path / "tools.sqlite", ToolCacheLimits(max_entries=3), clock=clock)
    cache.put(outcome("1/0", "division by zero", ok=False), "corpus")
    assert cache.size() == 0
    for n in range(5):
        clock.now += 1
        cache.put(outcome(f"{n}+1", str(n + 1)), "corpus")
        if n == 2:
            clock.now += 1
            assert cache.get("python.calculate", {"expression": "0+1"}, "corpus") is not None

    assert cache.size() == 3
    kept = [n for n in range(5) if cache.get("python.calculate", {"expression": f"{n}+1"}, "corpus")]
    assert kept == [0, 3, 4], "the least recently used went first"
    cache.put(outcome("9+1", "10"), "after-reindex")
    assert cache.size() == 1, "entries over other documents are dropped"


@pytest.mark.slow
async def test_the_run_answers_a_repeated_calculation_from_the_cache_but_never_the_clock(
    team: Team, hub: ToolHub, tmp_path: Path
) -> None:
    run = team.resources(hub)
    run.tool_cache = ToolCallCache(tmp_path / "tools.sqlite")
    assert hub.specs["python.calculate"].cacheable, "the calculator declares itself closed-world"
    assert not hub.specs["clock.now"].cacheable and not hub.specs["python.run_python"].cacheable

    first = await run.call_tool("python.calculate", {"expression": "6*7"})
    second = await run.call_tool("python.calculate", {"expression": "6*7"})
    now = [await run.call_tool("clock.now", {"timezone": "UTC"}) for _ in range(2)]

    assert first.ok and not first.cached and second.cached and second.output == first.output
    assert all(call.ok and not call.cached for call in now)
    assert run.tool_cache.size() == 1


@pytest.mark.slow
async def test_a_run_that_bypasses_the_cache_calls_the_tool_again(
    team: Team, hub: ToolHub, tmp_path: Path
) -> None:
    cache = ToolCallCache(tmp_path / "tools.sqlite")
    run = team.resources(hub)
    run.tool_cache = cache
    await run.call_tool("python.calculate", {"expression": "6*7"})
    bypassing = Run(
        make_settings().model_copy(update={"bypass_cache": True}), run.models, hub, tool_cache=cache
    )

    fresh = await bypassing.call_tool("python.calculate", {"expression": "6*7"})

    assert fresh.ok and not fresh.cached


def test_the_run_s_corpus_follows_the_index_its_docsearch_reads(tmp_path: Path) -> None:
    index = tmp_path / "index"
    connection = {
        "transport": "stdio",
        "command": "unused",
        "args": [],
        "env": {"AISEARCH_INDEX_DIR": str(index)},
    }
    run = Run(make_settings(), lambda role: None, ToolHub({"docsearch": connection}))  # type: ignore[arg-type,return-value]
    assert run.corpus() == "empty"
    manifest = index / "collections" / "docs" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"version": 1, "sources": {"a.md": {"digest": "1", "passages": []}}}')
    first = run.corpus()

    manifest.write_text('{"version": 1, "sources": {"a.md": {"digest": "22", "passages": []}}}')

    assert first != "empty" and run.corpus() != first
