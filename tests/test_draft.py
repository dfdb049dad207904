"""DRAFT against the live python server: diversity filter, Δ or budget stop, the original kept."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_asyncio

from tools.draft import DraftLimits, refine_tool
from tools.hub import ToolHub, original_spec, refined_spec
from tools.index.embedder import shared_embedder
from tools.refinements import load_refinement, save_refinement
from tools.registry import bundled_connections

pytestmark = pytest.mark.asyncio(loop_scope="module")
REFINED = (
    "Calculator: evaluate an arithmetic expression and return the number. Write powers as ** or ^. "
    "Division by zero returns an error. Example: expression='17 * 23 + 4' gives 395."
)


class ScriptedDraft:
    """The explorer, analyzer and rewriter, scripted: queries in order, documents in order."""

    def __init__(self, queries: list[str], documents: list[str]) -> None:
        self.queries, self.documents = list(queries), list(documents)
        self.prompts: list[str] = []

    def __call__(self, messages: list[dict[str, str]]) -> str:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        if prompt.startswith("You explore a tool"):
            query = self.queries.pop(0)
            return json.dumps({"query": query, "arguments": {"expression": query.split(": ")[-1]}})
        if prompt.startswith("You review a tool's document"):
            return "- say that division by zero is an error"
        return json.dumps({"document": self.documents.pop(0), "next_direction": "error cases"})


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hub() -> AsyncIterator[ToolHub]:
    async with ToolHub.open({"python": bundled_connections()["python"]}) as opened:
        yield opened


@pytest.mark.slow
async def test_refinement_rejects_repeated_trials_and_stops_when_versions_converge(hub: ToolHub) -> None:
    spec = hub.specs["python.calculate"]
    chat = ScriptedDraft(
        ["Compute: 17 * 23 + 4", "Compute: 17 * 23 + 4", "Divide by zero: 1 / 0"],
        [REFINED, REFINED + " Trigonometry uses radians."],
    )

    refinement = await refine_tool(spec, hub, chat, shared_embedder(), DraftLimits(max_rounds=5))

    assert refinement.rejected == 1, "the repeated query was rejected by the diversity filter"
    assert any("too close to an earlier trial" in prompt for prompt in chat.prompts)
    assert [trial["result"] for trial in refinement.trials] == [
        "395",
        "ERROR: Error executing tool calculate: division by zero",
    ]
    assert refinement.trials[1]["ok"] is False  # the live tool's real error
    assert len(refinement.versions) == 2 and refinement.stop.startswith("converged")
    assert refinement.deltas[-1] > 0.75 >= refinement.deltas[0]
    assert refinement.original == spec.description


@pytest.mark.slow
async def test_refinement_stops_at_its_round_budget(hub: ToolHub) -> None:
    spec = hub.specs["python.calculate"]
    chat = ScriptedDraft(
        ["Compute: 2 + 2", "Powers: 2 ** 10"], ["Adds numbers.", "Raises a number to a power; also roots."]
    )

    refinement = await refine_tool(spec, hub, chat, shared_embedder(), DraftLimits(max_rounds=2, tau=0.99))

    assert refinement.stop == "round budget (2) spent" and len(refinement.versions) == 2


@pytest.mark.slow
async def test_a_rewrite_that_breaks_its_json_is_asked_again(hub: ToolHub) -> None:
    spec = hub.specs["python.calculate"]
    broken = '{"document": "Calculator: write "17 * 23" as is.", "next_direction": ""}'  # a quote unescaped
    chat = ScriptedDraft(["Compute: 2 + 2"], [REFINED.replace("'", "&amp;#39;")])
    replies = iter([broken])

    def chat_once_broken(messages: list[dict[str, str]]) -> str:
        if messages[-1]["content"].startswith("You rewrite"):
            return next(replies, None) or chat(messages)
        return chat(messages)

    refinement = await refine_tool(spec, hub, chat_once_broken, shared_embedder(), DraftLimits(max_rounds=1))

    assert refinement.versions == [REFINED], "the second reply was used, its quotes as quotes"


@pytest.mark.slow
async def test_a_stored_refinement_replaces_the_document_but_never_the_original(
    hub: ToolHub, tmp_path: Path
) -> None:
    spec = hub.specs["python.calculate"]
    chat = ScriptedDraft(["Compute: 1 + 1"], [REFINED])
    refinement = await refine_tool(spec, hub, chat, shared_embedder(), DraftLimits(max_rounds=1))
    save_refinement(refinement, tmp_path)

    shown = refined_spec(spec, tmp_path)
    assert shown.description == REFINED and shown.parameters == spec.parameters
    assert original_spec(shown, tmp_path).description == spec.description
    stored = load_refinement(spec.name, tmp_path)
    assert stored is not None and stored.original == spec.description
    assert "+Calculator: evaluate an arithmetic expression and return the number." in stored.diff()
    changed = replace(spec, description="A new version of the tool's own document.")
    assert refined_spec(changed, tmp_path) is changed, "a refinement of an older original is not applied"
