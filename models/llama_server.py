"""How llama.cpp's own ``llama-server`` serves the local models (``local.server = "llama-server"``).

One ``llama-server`` in router mode listens on the server's port and serves every alias: a preset
file (``models.ini``) names each alias's GGUF, and the router starts one model instance per alias
(its own process, loaded at start and kept loaded) and forwards each request by its ``model`` field.
Each instance runs ``local.parallel`` requests at once with continuous batching, each in a slot of
``local.n_ctx`` tokens of one shared KV pool, keeps a RAM prompt cache of ``local.prompt_cache_bytes``
and answers ``/metrics`` (``/metrics?model=ALIAS`` through the router); ``local.resident_models``
is llama-cpp-python's only. The binary is built once, on request, by
``scripts/build_llama_server.sh`` from the llama.cpp that llama-cpp-python's sdist vendors (the
set-up runs it only when ``local.server`` is ``llama-server``); without it a start stops with one
line naming that command.

``models/llama_server_launcher.py`` runs the router as its child and exits when idle; this module
builds its command, preset and configuration.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from models.assemble import cache_dir
from models.config import ModelSettings
from models.errors import LocalServerError

LLAMA_SERVER_VERSION = "0.3.36"
"""The llama-cpp-python release whose vendored llama.cpp the binary is built from."""
LAUNCHER_MODULE = "models.llama_server_launcher"
BUILD_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "build_llama_server.sh"


def default_binary() -> Path:
    """Where the build script puts the binary: ``<cache>/llama-server/<version>/llama-server``."""
    return cache_dir() / "llama-server" / LLAMA_SERVER_VERSION / "llama-server"


def binary_path(settings: ModelSettings) -> Path:
    """The configured binary (``local.llama_server_bin``), else the one the build script makes."""
    configured = settings.local.llama_server_bin
    return configured.expanduser() if configured is not None else default_binary()


def require_binary(settings: ModelSettings) -> Path:
    """The binary's path, checked.

    Raises:
        LocalServerError: It is missing or not executable (the message says how to build it).
    """
    path = binary_path(settings)
    if settings.local.llama_server_bin is not None and not path.is_file():
        raise LocalServerError(
            f"llama-server binary not found at {path} (local.llama_server_bin, AISEARCH_LOCAL_LLAMA_SERVER_BIN)"
        )
    if not path.is_file():
        raise LocalServerError(
            f"llama-server binary not found: build it once with {BUILD_SCRIPT} (about 20 min on 2 cores), "
            'or serve with llama-cpp-python: local.server = "llama-cpp-python" (AISEARCH_LOCAL_SERVER)'
        )
    if not path.stat().st_mode & 0o111:
        raise LocalServerError(f"llama-server binary {path} is not executable (chmod +x it)")
    return path


def instance_options(settings: ModelSettings) -> dict[str, str]:
    """The options every model instance runs with (keys as llama-server's long flags)."""
    local = settings.local
    options = {
        "parallel": str(local.parallel),
        "kv-unified": "true",
        # the pool is sized parallel x n_ctx, and one request gets at most n_ctx, as with llama-cpp-python
        "kv-unified-per-slot": str(local.n_ctx),
        "threads": str(local.n_threads),
        "threads-batch": str(local.n_threads),
        # loaded into process memory, not mmap-ed: see models/server_spec.py
        "load-mode": "none",
        # the RAM prompt cache across slots (0: off); each slot reuses its own prompt prefix anyway
        "cache-ram": str(local.prompt_cache_bytes >> 20),
        "metrics": "true",
        # llama-cpp-python's default, for a request that sends none (llama-server's is 1.0, off);
        # the roles send their own (models.<role>.repeat_penalty)
        "repeat-penalty": "1.1",
        "load-on-startup": "true",
    }
    if local.chat_template:
        options["chat-template"] = local.chat_template
    return options


def preset_text(settings: ModelSettings, models: dict[str, Path]) -> str:
    """The router's ``--models-preset`` file: shared options, then one section per alias."""
    lines = ["version = 1", "", "[*]"]
    lines += [f"{key} = {value}" for key, value in instance_options(settings).items()]
    for alias, path in models.items():
        lines += ["", f"[{alias}]", f"model = {path}"]
    return "\n".join(lines) + "\n"


def router_args(settings: ModelSettings, preset: Path, port: int, n_models: int) -> list[str]:
    """The router's own arguments: every model loaded at start, and kept (room for all of them)."""
    return [
        "--host", settings.local.host, "--port", str(port), "--models-preset", str(preset),
        "--models-max", str(n_models), "--no-ui",
    ]  # fmt: skip


def launch_command(settings: ModelSettings, models: dict[str, Path], port: int, directory: Path) -> list[str]:
    """Write ``models.ini`` and ``config.json`` into ``directory``; return the launcher's command line.

    Raises:
        LocalServerError: The binary is missing.
    """
    binary = require_binary(settings)
    preset = directory / "models.ini"
    preset.write_text(preset_text(settings, models))
    config = directory / "config.json"
    launch: dict[str, Any] = {
        "command": [str(binary), *router_args(settings, preset, port, len(models))],
        "host": settings.local.host,
        "port": port,
        "aliases": list(models),
        "idle_s": settings.local.idle_minutes * 60,
    }
    config.write_text(json.dumps(launch, indent=2))
    return [sys.executable, "-m", LAUNCHER_MODULE, "--config", str(config)]


def fingerprint_options(settings: ModelSettings) -> dict[str, Any]:
    """What of the settings a running llama-server must match (besides its models)."""
    return {
        "server": "llama-server",
        "binary": str(binary_path(settings)),
        "host": settings.local.host,
        "instance": instance_options(settings),
        "idle_minutes": settings.local.idle_minutes,
    }
