"""``aisearch eval tool-retrieval``: ground truth, metrics against hand-computed values, the JSON contract."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from app.cli import main
from evals.tool_retrieval import (
    Task,
    labels_of,
    server_groups,
    server_ndcg,
    server_recall,
    summarize,
    tool_recall,
)
from tests.support.tool_catalog import write_catalog
from tools.catalog.retrieve import Retrieval, ServerHit, ToolHit

CONTRACT = (
    "n_tasks",
    "server_recall@1",
    "server_recall@3",
    "server_recall@5",
    "server_ndcg@5",
    "tool_recall@5",
    "tool_recall@10",
    "complete@10",
    "unmapped_labels",
    "query_ms_p50",
)


def test_labels_and_server_groups() -> None:
    task = {"Annotator Metadata": {"Tools": "1. load\n2. beat_track\n 3. load\n\n"}}
    assert labels_of(task) == ["load", "beat_track"]
    owners = {"search_papers": ["ArXiv", "Simple"], "get_paper_data": ["Simple"], "time": ["Time"]}
    groups = server_groups(["search_papers", "get_paper_data", "unknown", "time"], owners)
    assert groups == [frozenset({"Simple"}), frozenset({"Time"})]  # the superset {ArXiv, Simple} is implied


def test_metrics_against_hand_computed_values() -> None:
    groups = [frozenset({"A"}), frozenset({"B", "C"})]
    ranked = ["X", "C", "A", "Y", "B"]
    assert [server_recall(groups, ranked, k) for k in (1, 2, 3)] == [0.0, 0.5, 1.0]
    # C (rank 2) and A (rank 3) each satisfy a group; B (rank 5) satisfies one already satisfied
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    assert server_ndcg(groups, ranked) == pytest.approx(dcg / (1 + 1 / math.log2(3)))
    assert server_ndcg(groups, ["A", "B"]) == pytest.approx(1.0)
    assert tool_recall(["a", "b", "c"], ["a", "x", "c"], 2) == pytest.approx(1 / 3)


def test_summary_averages_over_scored_tasks() -> None:
    def retrieval(servers: list[str], tools: list[str], ms: float) -> Retrieval:
        return Retrieval(
            ["q"],
            [ServerHit(s, 1.0, "q", "server") for s in servers],
            [ToolHit("S", t, 1.0, "q") for t in tools],
            ms,
        )

    tasks = [
        Task("1", "q1", ["a", "b"], ["a", "b"], [frozenset({"A"}), frozenset({"B"})]),
        Task("2", "q2", ["c", "zzz"], ["c"], [frozenset({"C"})]),
        Task("3", "q3", ["nothing"], [], []),  # no mapped label: not scored
    ]
    results = [
        retrieval(["A", "X", "Y", "Z", "W"], ["a", "q", "b"], 10.0),
        retrieval(["X", "C"], ["c"], 30.0),
        retrieval([], [], 20.0),
    ]
    report = summarize(tasks, results)
    assert report["n_tasks"] == 3 and report["n_scored"] == 2
    assert report["server_recall@1"] == pytest.approx((0.5 + 0.0) / 2)
    assert report["server_recall@3"] == pytest.approx((0.5 + 1.0) / 2)
    assert report["tool_recall@5"] == pytest.approx(1.0) and report["complete@10"] == pytest.approx(1.0)
    assert report["unmapped_labels"] == 2 and report["unmapped_label_names"] == ["nothing", "zzz"]
    assert report["query_ms_p50"] == 20.0


@pytest.mark.slow
def test_the_cli_prints_the_json_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AISEARCH_TOOLS_DIR", str(tmp_path / "tools"))
    catalog = write_catalog(tmp_path / "tools.json")
    tasks = tmp_path / "tasks.json"
    tasks.write_text(
        json.dumps(
            [
                {
                    "task_id": "t1",
                    "Question": "Will it rain tomorrow?",
                    "Annotator Metadata": {"Tools": "1. get_forecast"},
                },
                {
                    "task_id": "t2",
                    "Question": "Buy railway tickets",
                    "Annotator Metadata": {"Tools": "1. get_tickets\n2. nope"},
                },
            ]
        )
    )
    args = ["eval", "tool-retrieval", "--catalog", str(catalog), "--tasks", str(tasks), "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(CONTRACT) <= set(report)
    assert report["n_tasks"] == 2 and report["unmapped_labels"] == 1
    assert report["server_recall@5"] == 1.0  # 4 servers: every one is in the top 5
    assert report["server_recall@1"] == 1.0 and report["tool_recall@5"] == 1.0

    assert main(["tools", "index", "--catalog", str(catalog), "--no-bundled"]) == 0
    assert main(["tools", "index", "--catalog", str(catalog), "--no-bundled"]) == 0
    assert "reused (up to date)" in capsys.readouterr().out.splitlines()[-1]
    assert main(["tools", "list", "--catalog", str(catalog), "--no-bundled", "--json"]) == 0
    assert [row["server"] for row in json.loads(capsys.readouterr().out)] == [
        "Weather",
        "Trains",
        "Files",
        "Editor",
    ]
    assert main(["tools", "show", "Nope", "--catalog", str(catalog), "--no-bundled"]) == 1
