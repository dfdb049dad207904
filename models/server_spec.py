"""What the embedded llama.cpp server serves, and how: each alias's GGUF (bundled, distilled or
the user's own), llama_cpp.server's ``--config_file`` (llama-server's configuration is
``models/llama_server.py``), the fingerprint a running server must match to be reused,
and the server's environment. ``models/local_server.py`` runs the server from them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from models import llama_server
from models.assemble import assemble, models_dir
from models.config import DEFAULT_MODELS, ROLES, ModelSettings
from models.distilled import DISTILLED_ALIAS, distilled_gguf
from models.errors import LocalServerError
from models.model_parts import REGISTRY

SERVER_REVISION = 2  # bump when the server-side code changes, so an older running server is replaced


def _model_ref(alias: str, settings: ModelSettings) -> Path | None:
    """The path an alias resolves to, or None for a registry model (assembled at start)."""
    if alias in settings.local.gguf:
        return Path(settings.local.gguf[alias]).expanduser()
    if alias == DISTILLED_ALIAS:
        return distilled_gguf()
    if alias in REGISTRY:
        return None
    if alias.endswith(".gguf"):
        return Path(alias).expanduser()
    raise LocalServerError(
        f"model {alias!r} is not a bundled model ({', '.join(REGISTRY)}), not a .gguf path, and not "
        "mapped in [local.gguf] / AISEARCH_LOCAL_GGUF; set base_url for a remote model instead"
    )


def served_aliases(settings: ModelSettings) -> list[str]:
    """The distinct model aliases of the roles that use the local server (defaults if none does)."""
    aliases = [settings.role(role).model for role in ROLES if settings.role(role).is_local]
    if not aliases:
        aliases = list(DEFAULT_MODELS.values())
    return list(dict.fromkeys(aliases))


def resolve_models(settings: ModelSettings, *, assemble_missing: bool = True) -> dict[str, Path]:
    """Map each served alias to its GGUF path, assembling bundled models if needed.

    With ``assemble_missing=False`` the bundled models' destination paths are returned without
    touching them (for comparing with a running server).

    Raises:
        LocalServerError: An unknown alias, or an own GGUF path that does not exist.
    """
    models: dict[str, Path] = {}
    for alias in served_aliases(settings):
        path = _model_ref(alias, settings)
        if path is None:
            if assemble_missing:
                path = assemble(alias)
            else:
                path = models_dir() / REGISTRY[alias].filename
        elif not path.is_file():
            raise LocalServerError(f"GGUF file for model {alias!r} not found: {path}")
        models[alias] = path
    return models


def server_config(settings: ModelSettings, models: dict[str, Path], port: int) -> dict[str, Any]:
    """The llama_cpp.server ``--config_file`` content (``ConfigFileSettings``)."""
    local = settings.local
    return {
        "host": local.host,
        "port": port,
        "interrupt_requests": False,
        "models": [
            {
                "model": str(path),
                "model_alias": alias,
                "n_ctx": local.n_ctx,
                "n_threads": local.n_threads,
                "n_threads_batch": local.n_threads,
                "chat_format": local.chat_format,
                # Load the weights into process memory instead of mmap-ing the file: this VM's
                # DAMON "pageout" reclaim drops idle file pages, so an mmap-ed model that sat idle
                # for a while is re-read from disk on the next call (first calls took 8-30 s).
                # Anonymous memory stays put (no swap). mlock is capped at 8 MB here, so no mlock.
                "use_mmap": False,
                "use_mlock": False,
                # The stock default (True) keeps logits for every position: n_ctx x vocab floats,
                # 2.5 GB per model at n_ctx 4096. Only prompt logprobs need it.
                "logits_all": False,
                # Keep evaluated prompts' states in RAM and resume from the longest cached prefix:
                # roles share the 1.5B model, so without it every master call re-reads its long
                # static prompt after a writer or planner call evicted it.
                "cache": local.prompt_cache_bytes > 0,
                "cache_type": "ram",
                "cache_size": max(local.prompt_cache_bytes, 1),
                "verbose": False,
            }
            for alias, path in models.items()
        ],
    }


def fingerprint(settings: ModelSettings, models: dict[str, Path]) -> dict[str, Any]:
    """What a running server must match: its models (alias -> path) and its other settings."""
    served = {alias: str(path) for alias, path in models.items()}
    if settings.local.server == "llama-server":
        return {
            "models": served,
            "options": llama_server.fingerprint_options(settings),
            "server": SERVER_REVISION,
        }
    config = server_config(settings, models, port=0)
    options = [
        {k: v for k, v in m.items() if k not in ("model", "model_alias")} for m in config.pop("models")
    ]
    config.pop("port")
    return {
        "models": served,
        "options": {
            **config,
            "model_options": options,
            "resident_models": settings.local.resident_models,
            "idle_minutes": settings.local.idle_minutes,
        },
        "server": SERVER_REVISION,
    }


# glibc's malloc raises its mmap threshold after each large free (up to 32 MB), so the prompt
# cache's saved states (tens of MB each) end up in heap arenas that fragment and never shrink;
# over 300 questions the server grew from 3 GB to 5 GB with a 1 GiB cache per model. A fixed
# threshold keeps those states in their own mappings, returned to the kernel when evicted, and two
# arenas keep llama.cpp's worker threads from each holding a private heap.
ALLOCATOR_ENV = {
    "MALLOC_ARENA_MAX": "2",
    "MALLOC_MMAP_THRESHOLD_": str(1 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(1 << 20),
}


def server_env(base: Mapping[str, str]) -> dict[str, str]:
    """The model server's environment: ``base`` plus the allocator settings it does not set itself."""
    return {**ALLOCATOR_ENV, **base, "PYTHONUNBUFFERED": "1"}
