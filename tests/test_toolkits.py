"""Toolkits: model-written descriptions cached by schema hash, k-means++ deterministic under a seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.hub import ToolSpec
from tools.index.embedder import shared_embedder
from tools.toolkits import choose_clusters, load_toolkits

TEXT = {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}
ZONE = {"type": "object", "properties": {"timezone": {"type": "string"}}}
QUERY = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
SPECS = [
    ToolSpec("python.calculate", "python", "Calculator: evaluate an arithmetic expression exactly.", TEXT),
    ToolSpec("python.calculate_precise", "python", "Calculator with arbitrary precision (mpmath).", TEXT),
    ToolSpec("mathx.evaluate", "mathx", "Evaluate a math formula and return the number.", TEXT),
    ToolSpec("clock.now", "clock", "Current date and time in a timezone.", ZONE),
    ToolSpec("worldtime.current", "worldtime", "What time is it now in a given time zone.", ZONE),
    ToolSpec("docsearch.search", "docsearch", "Search the local documents for passages.", QUERY),
    ToolSpec("web.web_search", "web", "Search the web for pages about a query.", QUERY),
]
LINES = {
    "python.calculate": "Computes the value of an arithmetic expression.",
    "python.calculate_precise": "Computes an arithmetic expression's numeric value precisely.",
    "mathx.evaluate": "Calculates the numeric result of a math expression.",
    "clock.now": "Tells the current time in a time zone.",
    "worldtime.current": "Gives the current local time for a time zone.",
    "docsearch.search": "Finds passages about a query in a document collection.",
    "web.web_search": "Finds web pages about a query.",
}


class ScriptedDescriber:
    """A chat function that writes each tool's functional line (Eq. 6), counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: list[dict[str, str]]) -> str:
        self.calls += 1
        prompt = messages[-1]["content"]
        name = prompt.split("Tool: ")[1].split("\n")[0]
        return LINES[name] + "\nextra prose the cache ignores"


@pytest.fixture(scope="module")
def embedder():
    return shared_embedder()


def test_toolkits_group_equivalent_tools_deterministically(tmp_path: Path, embedder) -> None:
    describer = ScriptedDescriber()
    first, computed = load_toolkits(SPECS, embedder, describer, seed=3, root=tmp_path / "a")
    assert computed and describer.calls == len(SPECS)
    assert first.descriptions["clock.now"] == LINES["clock.now"]
    groups = {frozenset(group) for group in first.groups}
    assert frozenset({"python.calculate", "python.calculate_precise", "mathx.evaluate"}) in groups
    assert frozenset({"clock.now", "worldtime.current"}) in groups
    assert first.k == 3 and first.silhouette is not None and first.silhouette > 0
    assert first.peers("python.calculate")[0] in {"python.calculate_precise", "mathx.evaluate"}

    again, _ = load_toolkits(SPECS, embedder, ScriptedDescriber(), seed=3, root=tmp_path / "b")
    assert again.groups == first.groups and again.similarity == first.similarity


def test_toolkits_are_recomputed_only_when_the_catalogue_changes(tmp_path: Path, embedder) -> None:
    describer = ScriptedDescriber()
    load_toolkits(SPECS, embedder, describer, root=tmp_path)
    cached, computed = load_toolkits(SPECS, embedder, describer, root=tmp_path)
    assert not computed and describer.calls == len(SPECS)

    changed = [*SPECS[:-1], ToolSpec("web.web_search", "web", "Search the internet.", QUERY)]
    _, computed = load_toolkits(changed, embedder, describer, root=tmp_path)
    assert computed and describer.calls == len(SPECS) + 1, "only the changed tool was described again"

    fixed, _ = load_toolkits(SPECS, embedder, describer, k=2, root=tmp_path)
    assert fixed.k == 2 and len(fixed.groups) == 2


def test_cluster_count_is_fixed_or_chosen_by_silhouette() -> None:
    points = [[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0], [10.0, 0.0], [10.1, 0.1]]
    labels, k, score = choose_clusters(points, 0, seed=0)
    assert k == 3 and score is not None and score > 0.9
    assert labels == choose_clusters(points, 0, seed=0)[0]
    assert choose_clusters(points, 2, seed=0)[1] == 2
    assert choose_clusters(points[:2], 0, seed=0) == ([0, 0], 1, None)
