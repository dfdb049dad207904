"""Unit tests of model assembly: fake part packages installed into a temporary site directory."""

from __future__ import annotations

import hashlib
import logging
import threading
from pathlib import Path

import filelock
import pytest

from models import assemble as asm
from models.assemble import assemble, assemble_file, model_path
from models.config import DEFAULT_MODELS
from models.model_parts import REGISTRY, ChecksumError, MissingPartError, ModelSpec, PartRef, locate_parts

PARTS = [b"GGUF-head-" + bytes(range(256)) * 3, b"middle-" * 500, b"tail!" * 77]
DIGEST = hashlib.sha256(b"".join(PARTS)).hexdigest()


def install_fake_part(site: Path, index: int, data: bytes, *, importable_code: str | None = None) -> PartRef:
    """Install distribution ``fakemodel-part<index>`` 1.0 (a dist-info plus the data file) into ``site``."""
    module = f"fakemodel_part{index}"
    relpath = f"{module}/data/part{index:02d}.bin"
    (site / module / "data").mkdir(parents=True)
    (site / relpath).write_bytes(data)
    # Importing the package would fail: assembly must locate the data without running this code.
    (site / module / "__init__.py").write_text(importable_code or "raise RuntimeError('imported!')\n")
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakemodel-part{index}\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"{module}/__init__.py,,\n{relpath},,\n{info.name}/METADATA,,\n")
    return PartRef(f"fakemodel-part{index}", "1.0", relpath)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory (``AISEARCH_CACHE_DIR``)."""
    monkeypatch.setenv("AISEARCH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> dict[str, ModelSpec]:
    """A registry with one model made of three fake installed part packages."""
    site = tmp_path / "site"
    site.mkdir()
    refs = tuple(install_fake_part(site, i, data) for i, data in enumerate(PARTS, start=1))
    monkeypatch.syspath_prepend(str(site))
    spec = ModelSpec("fake-model", "fake-model.gguf", refs, DIGEST, sum(map(len, PARTS)))
    return {spec.alias: spec}


class CountingProgress:
    """A progress factory that records every bar it makes."""

    def __init__(self) -> None:
        self.bars: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def __call__(self, total: int, desc: str) -> CountingProgress:
        with self.lock:
            self.bars.append((desc, total))
        return self

    def update(self, n: int) -> None:
        """Ignore progress."""

    def close(self) -> None:
        """Nothing to close."""


def test_registry_aliases_are_the_default_models() -> None:
    assert set(REGISTRY) == set(DEFAULT_MODELS.values())
    for spec in REGISTRY.values():
        assert len(spec.sha256) == 64 and spec.filename.endswith(".gguf")


def test_real_parts_are_installed_and_sized() -> None:
    for spec in REGISTRY.values():
        paths = locate_parts(spec)
        assert [p.name for p in paths] == [f"part{i:02d}.bin" for i in range(1, len(spec.parts) + 1)]
        assert sum(p.stat().st_size for p in paths) == spec.size


def test_cache_dir_env_override(cache: Path) -> None:
    assert asm.models_dir() == cache / "models"


def test_assembles_parts_in_order_without_importing(registry: dict[str, ModelSpec], cache: Path) -> None:
    path = model_path("fake-model", registry=registry)
    assert path == cache / "models" / "fake-model.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert not path.with_name(path.name + ".partial").exists()
    assert path.with_name(path.name + ".verified").exists()


def test_second_call_trusts_the_stamp(
    registry: dict[str, ModelSpec], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = assemble("fake-model", registry=registry, progress=None)

    def no_hashing(*_args: object, **_kwargs: object) -> str:
        raise AssertionError("a verified file must not be hashed again")

    monkeypatch.setattr(asm, "sha256_file", no_hashing)
    monkeypatch.setattr(asm, "locate_parts", no_hashing)
    assert assemble("fake-model", registry=registry, progress=None) == path


def test_checksum_mismatch_names_file_and_both_digests(registry: dict[str, ModelSpec], cache: Path) -> None:
    spec = registry["fake-model"]
    bad = {"fake-model": ModelSpec(spec.alias, spec.filename, spec.parts, "0" * 64, spec.size)}
    with pytest.raises(ChecksumError) as info:
        assemble("fake-model", registry=bad, progress=None)
    message = str(info.value)
    dest = cache / "models" / "fake-model.gguf"
    assert str(dest) in message and "0" * 64 in message and DIGEST in message
    assert not dest.exists(), "a file with the wrong digest must never be put in place"
    assert not dest.with_name(dest.name + ".partial").exists()


def test_corrupted_existing_file_is_an_error_not_a_silent_load(registry: dict[str, ModelSpec]) -> None:
    path = assemble("fake-model", registry=registry, progress=None)
    data = bytearray(path.read_bytes())
    data[5] ^= 0xFF
    path.write_bytes(bytes(data))  # same size, new mtime: the stamp no longer matches
    with pytest.raises(ChecksumError, match=str(path)):
        model_path("fake-model", registry=registry)
    # --force rebuilds it from the parts
    assert assemble("fake-model", registry=registry, force=True, progress=None).read_bytes() == b"".join(
        PARTS
    )


def test_missing_part_names_the_package(registry: dict[str, ModelSpec]) -> None:
    spec = registry["fake-model"]
    missing = PartRef("fakemodel-part9", "1.0", "fakemodel_part9/data/part09.bin")
    broken = {"fake-model": ModelSpec(spec.alias, spec.filename, (*spec.parts, missing), DIGEST, 0)}
    with pytest.raises(MissingPartError) as info:
        assemble("fake-model", registry=broken, progress=None)
    assert "pip install fakemodel-part9==1.0" in str(info.value)
    assert "fakemodel-part1" not in str(info.value)


def test_unknown_alias_lists_the_known_ones(registry: dict[str, ModelSpec]) -> None:
    with pytest.raises(KeyError, match="fake-model"):
        assemble("nope", registry=registry)


def _partial(cache: Path) -> Path:
    dest = cache / "models" / "fake-model.gguf"
    dest.parent.mkdir(parents=True, exist_ok=True)
    return dest.with_name(dest.name + ".partial")


def test_interrupted_write_resumes_after_complete_parts(
    registry: dict[str, ModelSpec], cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _partial(cache).write_bytes(PARTS[0] + PARTS[1][:100])  # part 1 complete, part 2 cut
    with caplog.at_level(logging.INFO, logger="models.assemble"):
        path = assemble("fake-model", registry=registry, progress=None)
    assert path.read_bytes() == b"".join(PARTS)
    assert "after 1 complete part(s)" in caplog.text
    assert not _partial(cache).exists()


def test_stale_partial_with_wrong_bytes_restarts_cleanly(
    registry: dict[str, ModelSpec], cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _partial(cache).write_bytes(b"X" * len(PARTS[0]) + PARTS[1] + b"junk")
    with caplog.at_level(logging.INFO, logger="models.assemble"):
        path = assemble("fake-model", registry=registry, progress=None)
    assert path.read_bytes() == b"".join(PARTS)
    assert "after 0 complete part(s)" in caplog.text


def test_partial_with_trailing_garbage_is_truncated(registry: dict[str, ModelSpec], cache: Path) -> None:
    _partial(cache).write_bytes(b"".join(PARTS) + b"garbage after the end")
    assert assemble("fake-model", registry=registry, progress=None).read_bytes() == b"".join(PARTS)


def test_lock_blocks_a_concurrent_assembly(tmp_path: Path) -> None:
    part = tmp_path / "p1"
    part.write_bytes(b"abc")
    dest = tmp_path / "out" / "m.gguf"
    dest.parent.mkdir()
    with filelock.FileLock(str(dest) + ".lock"):
        with pytest.raises(filelock.Timeout):
            assemble_file(dest, [part], hashlib.sha256(b"abc").hexdigest(), progress=None, lock_timeout_s=0.2)
    assert not dest.exists()


def test_two_concurrent_callers_assemble_once(registry: dict[str, ModelSpec]) -> None:
    progress = CountingProgress()
    results: list[Path] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(assemble("fake-model", registry=registry, progress=progress))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(set(results)) == 1 and results[0].read_bytes() == b"".join(PARTS)
    assert [desc for desc, _ in progress.bars if desc.startswith("assembling")] == ["assembling fake-model"]
