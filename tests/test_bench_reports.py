"""A benchmark's report never overwrites an earlier one of the same day."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import bench_cli


def test_a_second_report_of_the_day_is_saved_beside_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("evals.run_dirs.RESULTS_DIR", tmp_path)
    morning = {"date": "2026-11-27", "commit": "8d185ef", "speedup": 1.07}
    later = {"date": "2026-11-27", "commit": "774d540", "speedup": 1.15}
    again = {"date": "2026-11-27", "commit": "774d540", "speedup": 1.12}

    stems = [
        bench_cli.save_report(report, "dag", lambda r: f"speed-up {r['speedup']}")
        for report in (morning, later, again)
    ]

    assert [stem.name for stem in stems] == [
        "bench-dag-2026-11-27",
        "bench-dag-2026-11-27-774d540",
        "bench-dag-2026-11-27-2",
    ]
    assert [stem.with_suffix(".md").read_text() for stem in stems] == [
        "speed-up 1.07",
        "speed-up 1.15",
        "speed-up 1.12",
    ]


def test_a_report_without_a_commit_is_numbered(tmp_path: Path) -> None:
    (tmp_path / "bench-soak-2026-11-27.json").write_text("{}")
    assert bench_cli.free_stem(tmp_path, "bench-soak-2026-11-27").name == "bench-soak-2026-11-27-2"
