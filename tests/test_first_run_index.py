"""The first ``ask`` indexes the standard library docs once: ``ensure_default_collection`` and the
CLI helper ``first_run_index``, in-process on a temporary index with a two-module corpus."""

from __future__ import annotations

import io
import logging
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from app import cli
from tools.index import first_run
from tools.index.first_run import default_build_enabled, ensure_default_collection
from tools.index.paths import DEFAULT_COLLECTION
from tools.index.service import default_build_needed
from tools.index.store import IndexStore
from tools.registry import bundled_connections, have_document_index


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> IndexStore:
    """An empty index in a temp dir (also what the registry sees) and a corpus of two small modules."""
    monkeypatch.setenv("AISEARCH_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("AISEARCH_DEFAULT_CORPUS_MODULES", "json,bisect")
    monkeypatch.setenv("AISEARCH_DEFAULT_CORPUS_TOPICS", "0")
    return IndexStore()


def _state(store: IndexStore) -> dict:
    return store.collection(DEFAULT_COLLECTION).state()


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200), out


@pytest.mark.slow
def test_the_first_call_builds_and_the_second_does_no_work(store: IndexStore) -> None:
    assert not have_document_index() and "docsearch" not in bundled_connections()
    steps: list[tuple[int, int]] = []
    report = ensure_default_collection(store, on_progress=lambda done, total: steps.append((done, total)))
    assert report is not None and report.passages_total > 0
    assert report.embedded == report.passages_total and steps[-1] == (report.passages_total,) * 2
    assert have_document_index() and "docsearch" in bundled_connections()
    state = _state(store)
    assert state["status"] == "ready" and state["passages"] == report.passages_total
    assert ensure_default_collection(store) is None
    assert _state(store)["generation"] == state["generation"]


@pytest.mark.slow
def test_a_half_built_collection_is_rebuilt(store: IndexStore) -> None:
    def die_after_embedding(done: int, total: int) -> None:
        if done == total:
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        ensure_default_collection(store, on_progress=die_after_embedding)
    assert _state(store)["status"] == "building" and default_build_needed(store)
    report = ensure_default_collection(store)
    assert report is not None and report.passages_total > 0
    assert report.passages_reused == report.passages_total  # the dead run's vectors are kept
    assert _state(store)["status"] == "ready" and ensure_default_collection(store) is None


@pytest.mark.slow
def test_a_build_by_another_process_is_neither_repeated_nor_raced(
    store: IndexStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    started, release = threading.Event(), threading.Event()
    results: dict[str, object] = {}

    def hold(done: int, total: int) -> None:
        started.set()
        release.wait(60)

    first = threading.Thread(
        target=lambda: results.update(first=ensure_default_collection(store, on_progress=hold))
    )
    first.start()
    assert started.wait(60)
    assert ensure_default_collection(store) is None  # being written by a live builder: present

    # a process that passed the check just before the builder created the collection waits for
    # the writer lock and then finds nothing to do
    monkeypatch.setattr(first_run, "default_build_needed", lambda store, name: True)
    caplog.set_level(logging.WARNING, logger="tools.index.store")
    second = threading.Thread(target=lambda: results.update(second=ensure_default_collection(store)))
    second.start()
    deadline = time.monotonic() + 60
    while "waiting for it" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "another process is indexing collection 'docs'" in caplog.text
    release.set()
    first.join(60)
    second.join(60)
    assert results["first"] is not None and results["second"] is None
    assert _state(store)["status"] == "ready"


@pytest.mark.slow
async def test_the_cli_helper_explains_shows_progress_and_summarises(store: IndexStore) -> None:
    console, out = _console()
    assert await cli.first_run_index(console, store) is True
    text = out.getvalue()
    assert cli.FIRST_RUN_NOTE in text
    passages = _state(store)["passages"]
    assert f"indexed {passages} passages of the standard library docs in" in text
    console, out = _console()
    assert await cli.first_run_index(console, store) is True and out.getvalue() == ""


async def test_a_failed_build_is_a_warning_and_the_question_goes_on(
    store: IndexStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(store: IndexStore, *, on_progress: object = None) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(cli, "ensure_default_collection", broken)
    console, out = _console()
    assert await cli.first_run_index(console, store) is False
    text = " ".join(out.getvalue().split())
    assert "warning: indexing the standard library docs failed (OSError: No space left on device)" in text
    assert "answering without docsearch" in text and "aisearch index --default" in text


def test_the_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    args = cli.build_parser().parse_args(["ask", "What does bisect do?", "--no-default-index"])
    assert args.no_default_index is True
    assert cli.build_parser().parse_args(["ask", "q"]).no_default_index is False
    for value, enabled in (("0", False), ("off", False), (" No ", False), ("false", False), ("1", True)):
        monkeypatch.setenv(first_run.DEFAULT_BUILD_ENV, value)
        assert default_build_enabled() is enabled
    monkeypatch.delenv(first_run.DEFAULT_BUILD_ENV)
    assert default_build_enabled() is True
