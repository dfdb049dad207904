"""Toolkits: functionally equivalent tools grouped by k-means++ over their descriptions (seed 001 §3.3.2).

1. Eq. 6: a model writes a one-line functional description of each tool from its document; the
   line is cached by a hash of the tool's name, document and schema, so it is written once.
   Without a model (a run) the cached line is used, else the document's first line.
2. Eq. 7: each line is embedded with the project's MiniLM (``tools/index/embedder.py``).
3. Eq. 8: the vectors are clustered with scikit-learn's k-means++ under a fixed seed; ``k`` is
   the configured one, or the one with the best silhouette score.

A toolkit's members are each other's backups (``agents/executor_backup.py``), ranked by cosine
similarity. Toolkits are stored per catalogue hash (``<tools dir>/toolkits/<hash>.json``), so
they are recomputed only when the catalogue changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from models.factory import ChatFn
from prompts import render
from tools.catalog.paths import default_tools_dir
from tools.hub import ToolSpec
from tools.index.embedder import TextEmbedder

log = logging.getLogger(__name__)
MAX_K = 12  # silhouette search range: 2 .. min(MAX_K, tools - 1)
DOC_CHARS = 1500  # of a tool's document shown to the describing model
LINE_CHARS = 200


def toolkits_dir(root: Path | None = None) -> Path:
    """Where the toolkits and the functional descriptions are cached."""
    return (root or default_tools_dir()) / "toolkits"


def spec_hash(spec: ToolSpec) -> str:
    """A hash of what a tool is: its name, document and input schema."""
    text = json.dumps([spec.name, spec.description, spec.parameters], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def catalogue_hash(specs: Iterable[ToolSpec], k: int, seed: int) -> str:
    """A hash of a set of tools and the clustering settings: a toolkit file's name."""
    text = json.dumps([sorted(spec_hash(spec) for spec in specs), k, seed])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def first_line(spec: ToolSpec) -> str:
    """A tool's own one-line description: its document's first non-empty line."""
    line = next((line.strip() for line in spec.description.splitlines() if line.strip()), "")
    return f"{spec.name}: {line or 'no description'}"[:LINE_CHARS]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=2, ensure_ascii=False))
    tmp.replace(path)


def describe_tools(
    specs: Sequence[ToolSpec], chat: ChatFn | None, root: Path | None = None
) -> dict[str, str]:
    """Tool name -> its functional description (Eq. 6), model-written when ``chat`` is given.

    Written lines are cached by :func:`spec_hash`; a tool the model fails to describe, or any
    uncached tool when ``chat`` is None, gets :func:`first_line`.
    """
    path = toolkits_dir(root) / "descriptions.json"
    cache = _read_json(path)
    lines: dict[str, str] = {}
    written = False
    for spec in specs:
        key = spec_hash(spec)
        if key not in cache and chat is not None:
            prompt = render("tools_describe", tool=spec.name, doc=spec.description[:DOC_CHARS])
            try:
                reply = chat([{"role": "user", "content": prompt}])
            except Exception as exc:  # noqa: BLE001 - one tool's failure leaves it its own line
                log.warning("no functional description for %s: %s", spec.name, exc)
                reply = ""
            line = next((part.strip() for part in reply.splitlines() if part.strip()), "")
            if line:
                cache[key] = line[:LINE_CHARS]
                written = True
        lines[spec.name] = cache.get(key) or first_line(spec)
    if written:
        _write_json(path, cache)
    return lines


def choose_clusters(vectors: Any, k: int, seed: int) -> tuple[list[int], int, float | None]:
    """k-means++ labels of ``vectors``, the k used and its silhouette (None when not computed).

    ``k`` > 0 is used as given (capped at the number of vectors); 0 tries 2 .. min(MAX_K, n - 1)
    and keeps the best silhouette score, ties to the smaller k.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    n = len(vectors)
    if n < 3:
        return [0] * n, 1 if n else 0, None

    def fit(count: int) -> list[int]:
        model = KMeans(n_clusters=count, init="k-means++", n_init=10, random_state=seed)
        return [int(label) for label in model.fit_predict(vectors)]

    if k > 0:
        count = min(k, n)
        labels = fit(count)
        score = float(silhouette_score(vectors, labels)) if 1 < count < n else None
        return labels, count, score
    best: tuple[float, int, list[int]] | None = None
    for count in range(2, min(MAX_K, n - 1) + 1):
        labels = fit(count)
        if len(set(labels)) < 2:
            continue
        score = float(silhouette_score(vectors, labels))
        if best is None or score > best[0] + 1e-9:
            best = (score, count, labels)
    if best is None:
        return [0] * n, 1, None
    return best[2], best[1], best[0]


@dataclass
class Toolkits:
    """The toolkits of one catalogue: groups of tool names and each pair's cosine similarity."""

    catalogue: str
    k: int
    silhouette: float | None
    groups: list[list[str]]
    descriptions: dict[str, str]
    similarity: dict[str, dict[str, float]] = field(default_factory=dict)

    def toolkit_of(self, tool: str) -> list[str]:
        """The toolkit ``tool`` belongs to (empty when it is not in the catalogue)."""
        return next((group for group in self.groups if tool in group), [])

    def peers(self, tool: str, min_similarity: float = 0.0) -> list[str]:
        """The other members of ``tool``'s toolkit at least ``min_similarity`` alike, most similar first."""
        scores = self.similarity.get(tool, {})
        others = [
            name for name in self.toolkit_of(tool) if name != tool and scores.get(name, 0.0) >= min_similarity
        ]
        return sorted(others, key=lambda name: (-scores.get(name, 0.0), name))

    def to_json(self) -> dict[str, Any]:
        """The toolkits as a JSON object."""
        return asdict(self)


def build_toolkits(
    specs: Sequence[ToolSpec],
    embedder: TextEmbedder,
    descriptions: Mapping[str, str],
    *,
    k: int = 0,
    seed: int = 0,
) -> Toolkits:
    """Embed each tool's description (Eq. 7) and cluster them (Eq. 8)."""
    specs = sorted(specs, key=lambda spec: spec.name)
    names = [spec.name for spec in specs]
    texts = [descriptions.get(name) or first_line(spec) for name, spec in zip(names, specs, strict=True)]
    vectors: Any = embedder.encode(texts) if names else []
    labels, count, score = choose_clusters(vectors, k, seed)
    groups: dict[int, list[str]] = {}
    for name, label in zip(names, labels, strict=True):
        groups.setdefault(label, []).append(name)
    similarity: dict[str, dict[str, float]] = {}
    index = {name: i for i, name in enumerate(names)}
    for group in groups.values():
        for name in group:
            similarity[name] = {
                other: round(float(vectors[index[name]] @ vectors[index[other]]), 4)
                for other in group
                if other != name
            }
    return Toolkits(
        catalogue=catalogue_hash(specs, k, seed),
        k=count,
        silhouette=None if score is None else round(score, 4),
        groups=sorted(groups.values(), key=lambda group: group[0]),
        descriptions=dict(zip(names, texts, strict=True)),
        similarity=similarity,
    )


def load_toolkits(
    specs: Sequence[ToolSpec],
    embedder: TextEmbedder | None = None,
    chat: ChatFn | None = None,
    *,
    k: int = 0,
    seed: int = 0,
    root: Path | None = None,
) -> tuple[Toolkits, bool]:
    """The toolkits of ``specs`` from the cache, or computed and cached; and whether they were computed.

    Args:
        specs: The catalogue's tools.
        embedder: MiniLM (default: this process's shared one, loaded when first needed).
        chat: The model that writes functional descriptions; None uses cached ones or first lines.
        k: Toolkits wanted; 0 chooses by silhouette.
        seed: k-means++ seed.
        root: The tools directory (default: ``$AISEARCH_TOOLS_DIR``).
    """
    path = toolkits_dir(root) / f"{catalogue_hash(specs, k, seed)}.json"
    cached = _read_json(path)
    if cached:
        try:
            return Toolkits(**cached), False
        except TypeError:
            log.warning("ignoring a malformed toolkit cache %s", path)
    if embedder is None:
        from tools.index.embedder import shared_embedder

        embedder = shared_embedder()
    toolkits = build_toolkits(specs, embedder, describe_tools(specs, chat, root), k=k, seed=seed)
    _write_json(path, toolkits.to_json())
    return toolkits, True
