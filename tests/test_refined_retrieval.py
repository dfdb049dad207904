"""Tool retrieval over the bundled clock server's real tools reads each tool's own document, while
the Planner and the Executor read the one DRAFT refined (no model: BM25, or words as vectors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tool_catalog import BagOfWordsEmbedder
from tools.candidates import ToolCandidates
from tools.catalog.run_catalog import hub_catalog
from tools.catalog.run_index import RunIndex
from tools.hub import ToolHub, ToolSpec
from tools.refinements import Refinement, description_hash, save_refinement
from tools.registry import bundled_connections
from tools.schema import normalise_schema
from tools.servers import clock_server

# DRAFT's rewrite of clock.date_diff (results/bundled-tools-2026-11-26/refined-documents/): its
# example questions are gone, while clock.shift_date's document keeps its own ("100 days after …")
REFINED_DATE_DIFF = (
    "The `clock.date_diff` tool calculates the number of days between two dates, with a breakdown of "
    "years, months, and days. The dates can be specified as ISO strings or as 'today', 'tomorrow', or "
    "'yesterday' (in UTC). Times of day are ignored. The result is negative when the end date is before "
    "the start."
)
QUESTIONS = [
    "How many days are there between 2024-03-01 and 2024-12-25?",
    "How many days until 2026-12-25?",
    "How long ago was 1969-07-20?",
]


async def clock_specs() -> list[ToolSpec]:
    """The bundled clock server's tools as its listing gives them (listed in-process, not started)."""
    listed = await clock_server.mcp.list_tools()
    return [
        ToolSpec(f"clock.{tool.name}", "clock", tool.description or "", normalise_schema(tool.inputSchema))
        for tool in listed
    ]


@pytest.fixture
async def refined_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ToolHub:
    """A hub over the clock's real tools (nothing started) showing DRAFT's date_diff document."""
    monkeypatch.setenv("AISEARCH_TOOLS_DIR", str(tmp_path / "tools"))
    specs = await clock_specs()
    (own,) = [spec for spec in specs if spec.name == "clock.date_diff"]
    refinement = Refinement(own.name, own.description, description_hash(own.description), [REFINED_DATE_DIFF])
    save_refinement(refinement)
    return ToolHub(
        {"clock": bundled_connections()["clock"]},
        described={"clock": specs},
        descriptions={"clock": clock_server.mcp.instructions or ""},
    )


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("dense", [False, True], ids=["bm25", "bag-of-words"])
def test_a_date_difference_ranks_date_diff_first_though_its_refined_document_is_shown(
    refined_hub: ToolHub, tmp_path: Path, question: str, dense: bool
) -> None:
    index = RunIndex(BagOfWordsEmbedder(), root=tmp_path / "index", max_embed=64 if dense else 0)

    selection = ToolCandidates(refined_hub, index).select(question, 3)

    assert selection.dense is dense
    names = [c["name"] for c in selection.candidates]
    assert names[:2] == ["clock.date_diff", "clock.shift_date"], names
    # the Planner and the Executor still read DRAFT's document
    assert refined_hub.specs["clock.date_diff"].description == REFINED_DATE_DIFF
    assert selection.candidates[0]["description"] == REFINED_DATE_DIFF


async def test_retrieval_indexes_the_tools_own_document(refined_hub: ToolHub) -> None:
    (date_diff,) = [t for t in hub_catalog(refined_hub).servers["clock"].tools if t.name == "date_diff"]
    own = {spec.name: spec for spec in await clock_specs()}["clock.date_diff"].description
    assert date_diff.description == own and "Example questions" in own
