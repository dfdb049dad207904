"""Lifecycle of the embedded OpenAI-compatible llama.cpp server (llama-cpp-python or llama-server).

``ensure_server(settings)`` returns the base URL (``http://127.0.0.1:PORT/v1``) of a server that
serves every local role's model by alias (``qwen2.5-coder-1.5b-instruct``,
``qwen2.5-coder-0.5b-instruct``, or your own GGUF). It reuses a running server recorded in
``<cache>/server/state.json`` when its pid is alive, is our server, and its port accepts
connections; otherwise it assembles the models (once), picks a free loopback port, starts
``python -m models.server_launcher --config_file <cache>/server/config.json`` detached (its own session,
output in ``<cache>/server/server.log``) and waits until ``GET /v1/models`` answers. A file lock
makes a second CLI run wait for the first one's start instead of starting another server.

The launcher (``models/server_launcher.py``, the code that runs inside the server process) runs
llama-cpp-python's own server (``llama_cpp.server``: FastAPI + uvicorn, JSON
``--config_file`` with one entry per ``model_alias``). With ``local.resident_models`` (default) it
keeps every model loaded, where the stock server unloads one model to load another each time the
requested alias changes (the 1.5B takes about 2.6 s to load, and the roles alternate).
``interrupt_requests`` is off so concurrent callers queue instead of cutting each other's streams.
With ``local.server = "llama-server"`` the process is ``python -m models.llama_server_launcher``
instead, running llama.cpp's own server, which serves requests at once (``models/llama_server.py``).

**Shutdown policy.** The server outlives the command that started it, by default, so the next
``aisearch ask`` starts in seconds instead of loading models again; ``aisearch models stop`` ends it.
``running_server(settings, stop_on_exit=True)`` (or ``local.keep_running = false`` /
``AISEARCH_LOCAL_KEEP_RUNNING=0``) stops at exit a server that this process started; a server that
was already running is never stopped by it.

Own GGUF files: a role's ``model`` may be a path to a ``.gguf`` file (the alias is that string), or
``[local.gguf]`` / ``AISEARCH_LOCAL_GGUF="alias=path;..."`` maps an alias to a path (this also
overrides a built-in alias). Such files are not checksummed.

This module is the lifecycle (state file, lock, spawn, health, reuse, stop); what is served and how
is ``models/server_spec.py``, the process handling it shares with the document server is
``models/server_process.py``, and the code that runs inside the server process is
``models/server_launcher.py``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeGuard

import httpx
from filelock import FileLock

from models import llama_server
from models.assemble import cache_dir
from models.config import ModelSettings
from models.errors import LocalServerError
from models.server_process import (
    ADDRESS_IN_USE,
    free_port,
    is_our_process,
    log_tail,
    pid_alive,
    port_open,
    spawn_detached,
    stop_ours,
    terminate,
)
from models.server_spec import fingerprint, resolve_models, server_config, server_env

log = logging.getLogger(__name__)

LAUNCHER_MODULE = "models.server_launcher"
# When set to 1, starting or reusing the server raises (the test suite sets it outside `local_model` tests)
FORBID_ENV = "AISEARCH_FORBID_LOCAL_MODELS"


class LocalModelsForbidden(LocalServerError):
    """This process may not reach the real local models (``AISEARCH_FORBID_LOCAL_MODELS=1``)."""


def server_dir() -> Path:
    """Where the server's state, config, lock and log live: ``<cache>/server``."""
    return cache_dir() / "server"


def state_path() -> Path:
    """The JSON state file of the running server."""
    return server_dir() / "state.json"


def _lock() -> FileLock:
    server_dir().mkdir(parents=True, exist_ok=True)
    return FileLock(str(server_dir() / "server.lock"))


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python is installed in this interpreter (not imported)."""
    return importlib.util.find_spec("llama_cpp") is not None


def require_program(settings: ModelSettings) -> None:
    """Raise a ``LocalServerError`` with the fix when the configured server program is missing."""
    if settings.local.server == "llama-server":
        llama_server.require_binary(settings)
    else:
        require_llama_cpp()


def require_llama_cpp() -> None:
    """Raise a ``LocalServerError`` with the fix when llama-cpp-python is missing."""
    if not llama_cpp_available():
        raise LocalServerError(
            "llama-cpp-python is not installed in this environment "
            f"({sys.executable}); run scripts/bootstrap.sh (it installs a build that works on this CPU), "
            "or point the roles at another OpenAI-compatible endpoint (AISEARCH_BASE_URL)."
        )


def refuse_if_forbidden() -> None:
    """Raise :class:`LocalModelsForbidden` when ``AISEARCH_FORBID_LOCAL_MODELS=1``."""
    if os.environ.get(FORBID_ENV) == "1":
        raise LocalModelsForbidden(
            f"the real local model server is off here ({FORBID_ENV}=1): a test that loads the real "
            "models must be marked `local_model`; any other gives its roles a fake endpoint"
        )


# ---- state ---------------------------------------------------------------------------------------


def read_state() -> dict[str, Any] | None:
    """The recorded server state, or None if there is none (or it is unreadable)."""
    try:
        state: dict[str, Any] = json.loads(state_path().read_text())
        return state
    except (OSError, ValueError):
        return None


def _write_state(state: dict[str, Any]) -> None:
    path = state_path()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    os.replace(tmp, path)


def server_alive(state: dict[str, Any]) -> bool:
    """Whether the server recorded in ``state`` runs, is ours and accepts connections."""
    pid = int(state.get("pid", 0))
    return (
        pid > 0
        and pid_alive(pid)
        and is_our_process(pid, str(state.get("config", "")))
        and port_open(state["host"], int(state["port"]))
    )


def health(base_url: str, timeout_s: float = 5.0) -> list[str] | None:
    """The model ids from ``GET {base_url}/models``, or None if the server does not answer in time.

    The stock server answers this only between generations (it takes the model lock).
    """
    try:
        resp = httpx.get(f"{base_url}/models", timeout=timeout_s)
        resp.raise_for_status()
        # llama-server's router lists a model from the start, with its status ("loading", "loaded")
        items = resp.json().get("data", [])
        return [item["id"] for item in items if (item.get("status") or {}).get("value", "loaded") == "loaded"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


# ---- start / ensure / stop -------------------------------------------------------------------


def _spawn(
    settings: ModelSettings, models: dict[str, Path], port: int, directory: Path
) -> tuple[subprocess.Popen[bytes], Path]:
    log_path = directory / "server.log"
    if settings.local.server == "llama-server":
        cmd = llama_server.launch_command(settings, models, port, directory)
    else:
        config = directory / "config.json"
        config.write_text(json.dumps(server_config(settings, models, port), indent=2))
        cmd = [sys.executable, "-m", LAUNCHER_MODULE, "--config_file", str(config)]
        if not settings.local.resident_models:
            cmd.append("--swap-models")
        if settings.local.idle_minutes > 0:
            cmd += ["--idle-minutes", str(settings.local.idle_minutes)]
    return spawn_detached(cmd, log_path, server_env(os.environ)), log_path


def _wait_healthy(
    proc: subprocess.Popen[bytes], base_url: str, aliases: list[str], log_path: Path, timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalServerError(
                f"the local model server exited with code {proc.returncode} while starting; "
                f"last lines of {log_path}:\n{log_tail(log_path)}"
            )
        ids = health(base_url, timeout_s=2.0)
        if ids is not None and set(aliases) <= set(ids):
            return
        time.sleep(0.25)
    terminate(proc.pid, 10.0)
    raise LocalServerError(
        f"the local model server did not become healthy within {timeout_s:.0f} s "
        f"(local.start_timeout_s); last lines of {log_path}:\n{log_tail(log_path)}"
    )


def _launch(settings: ModelSettings, models: dict[str, Path], directory: Path) -> dict[str, Any]:
    """Start a server with its files in ``directory``, wait until it serves ``models``; its state."""
    host = settings.local.host
    for attempt in range(3):
        port = settings.local.port or free_port(host)
        base_url = f"http://{host}:{port}/v1"
        started = time.monotonic()
        proc, log_path = _spawn(settings, models, port, directory)
        log.info(
            "starting the local model server (%s, pid %d) on %s", settings.local.server, proc.pid, base_url
        )
        try:
            _wait_healthy(proc, base_url, list(models), log_path, settings.local.start_timeout_s)
        except LocalServerError as exc:
            retry = not settings.local.port and any(s in str(exc).lower() for s in ADDRESS_IN_USE)
            if retry and attempt < 2:
                log.warning("port %d was taken meanwhile; retrying on another port", port)
                continue
            raise
        state = {
            "pid": proc.pid,
            "server": settings.local.server,
            "host": host,
            "port": port,
            "base_url": base_url,
            "models": {alias: str(path) for alias, path in models.items()},
            "log": str(log_path),
            "config": str(directory / "config.json"),
            "started_at": time.time(),
            "start_seconds": round(time.monotonic() - started, 2),
            "fingerprint": fingerprint(settings, models),
        }
        log.info("local model server healthy after %.1f s", state["start_seconds"])
        return state
    raise AssertionError("unreachable")


def _start(settings: ModelSettings, models: dict[str, Path]) -> dict[str, Any]:
    state = _launch(settings, models, server_dir())
    _write_state(state)
    return state


def _reusable(
    state: dict[str, Any] | None, settings: ModelSettings, models: dict[str, Path]
) -> TypeGuard[dict[str, Any]]:
    """Whether the recorded server can serve this run.

    It must run, be ours, listen on the requested port (if one is set) and serve every requested
    alias from the same file. Other differences (n_ctx, threads, ...) only log a warning: restarting
    would break the requests of another command using the server; ``aisearch models stop`` applies them.
    """
    if not state or not server_alive(state):
        return False
    if settings.local.port and int(state["port"]) != settings.local.port:
        return False
    wanted = fingerprint(settings, models)
    recorded = state.get("fingerprint") or {}
    served = recorded.get("models", {})
    if any(served.get(alias) != path for alias, path in wanted["models"].items()):
        return False
    if recorded.get("options") != wanted["options"]:
        log.warning(
            "the running local model server (pid %s) was started with other settings; reusing it. "
            "Run `aisearch models stop` to apply the new ones.",
            state.get("pid"),
        )
    return True


def served_models(state: dict[str, Any]) -> dict[str, Path]:
    """The models a recorded server serves whose files are still there, by alias."""
    served = (state.get("fingerprint") or {}).get("models") or {}
    return {alias: Path(path) for alias, path in served.items() if Path(path).is_file()}


def _stop_recorded(state: dict[str, Any], timeout_s: float) -> bool:
    stopped = stop_ours(
        int(state.get("pid", 0)), str(state.get("config", "")), timeout_s, "local model server"
    )
    state_path().unlink(missing_ok=True)
    return stopped


def ensure_server_state(settings: ModelSettings) -> tuple[dict[str, Any], bool]:
    """Like :func:`ensure_server`, but return the state record and whether this call started it."""
    refuse_if_forbidden()
    require_program(settings)
    wanted = resolve_models(settings, assemble_missing=False)
    state = read_state()
    if _reusable(state, settings, wanted):
        return state, False
    lock_timeout = settings.local.start_timeout_s + 1800.0  # a first run may assemble 1.6 GB first
    with _lock().acquire(timeout=lock_timeout):
        state = read_state()
        if _reusable(state, settings, wanted):
            return state, False
        models = resolve_models(settings)
        if state:
            if server_alive(state):
                kept = served_models(state)
                log.warning(
                    "the running local model server does not serve %s; restarting it with them and "
                    "the models it serves (%s)",
                    ", ".join(sorted(set(models) - set(kept))) or "these files",
                    ", ".join(sorted(kept)) or "none",
                )
                models = kept | models  # another command may be using them: never dropped
            _stop_recorded(state, 15.0)
        return _start(settings, models), True


def ensure_server(settings: ModelSettings) -> str:
    """Return the base URL (``http://HOST:PORT/v1``) of a healthy local server, starting one if needed.

    Raises:
        LocalServerError: llama-cpp-python is missing, a GGUF is missing, or the server died or did
            not become healthy within ``local.start_timeout_s`` (the message has the log tail).
        models.model_parts.AssemblyError: A bundled model could not be assembled or verified.
    """
    url: str = ensure_server_state(settings)[0]["base_url"]
    return url


@contextlib.contextmanager
def running_server(settings: ModelSettings, *, stop_on_exit: bool | None = None) -> Iterator[str]:
    """Yield the local server's base URL; at exit stop it only if this call started it and stopping is asked.

    Args:
        settings: Effective settings.
        stop_on_exit: True to stop a server started here, False to leave it running for reuse;
            None (default) follows ``settings.local.keep_running`` (default: leave it running).
    """
    state, started = ensure_server_state(settings)
    try:
        yield state["base_url"]
    finally:
        stop = (not settings.local.keep_running) if stop_on_exit is None else stop_on_exit
        if started and stop:
            stop_server()


@contextlib.contextmanager
def private_server(settings: ModelSettings, directory: Path) -> Iterator[dict[str, Any]]:
    """A server of its own, files in ``directory``: never recorded, reused or revived, stopped at exit
    (benchmarks run one beside the user's server this way). Yields its state."""
    refuse_if_forbidden()
    require_program(settings)
    directory.mkdir(parents=True, exist_ok=True)
    state = _launch(settings, resolve_models(settings), directory)
    try:
        yield state
    finally:
        stop_ours(int(state["pid"]), str(state["config"]), 15.0, "private model server")


def stop_server(timeout_s: float = 15.0) -> bool:
    """Stop the recorded server if it is running; return whether a process was stopped."""
    state = read_state()
    if not state:
        return False
    with _lock().acquire(timeout=timeout_s + 600.0):
        state = read_state()
        return _stop_recorded(state, timeout_s) if state else False


def server_status(check_health: bool = True) -> dict[str, Any]:
    """The recorded server and whether it runs: ``{"running": bool, ...state, "healthy": ...}``.

    ``healthy`` is the list of served model ids, or None when ``/v1/models`` did not answer within
    a few seconds (for example while a long generation holds the model lock).
    """
    state = read_state()
    if not state:
        return {"running": False}
    running = server_alive(state)
    result: dict[str, Any] = {"running": running, **state}
    if running:
        result["uptime_s"] = round(time.time() - float(state.get("started_at", time.time())), 1)
        if check_health:
            result["healthy"] = health(state["base_url"])
    return result
