"""What the ``aisearch tools`` commands share: the catalogue they name, their error guard, and the
chat model that decomposes queries and writes synthetic queries."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.commands import Handler, guarded
from tools.catalog.load import CatalogError
from tools.index.errors import IndexUserError

if TYPE_CHECKING:
    from models.config import Role

DECOMPOSER_ROLE: Role = "planner"  # the role whose model decomposes queries and writes synthetic queries


def guard_catalog(handler: Handler) -> Handler:
    """``handler`` with the catalogue's, the index's and bad input's errors as one line and exit 1."""
    return guarded(handler, (CatalogError, IndexUserError, FileNotFoundError, ValueError), code=1)


def open_catalog(args: argparse.Namespace) -> Any:
    """The catalogue the arguments name: the bundled servers, ``--catalog`` files, the user's ``mcp.json``."""
    from core.settings import load_settings
    from tools.catalog.load import load_catalog

    files = [Path(p).expanduser() for p in args.catalog or []]
    mcp_config = None if args.no_bundled else load_settings().mcp_config
    return asyncio.run(load_catalog(files, mcp_config=mcp_config, bundled=not args.no_bundled))


def decomposer_chat(
    temperature: float, max_tokens: int, response_format: dict[str, Any] | None = None
) -> Any:
    """The configured model of :data:`DECOMPOSER_ROLE` as a plain chat function; ``response_format``
    is sent only to a role that takes JSON schemas (the local server, or ``json_schema = true``)."""
    from models.config import load_model_settings
    from models.factory import openai_chat, resolve_base_url

    settings = load_model_settings()
    role = settings.role(DECOMPOSER_ROLE)
    base_url = resolve_base_url(DECOMPOSER_ROLE, settings)
    return openai_chat(
        base_url,
        role.model,
        role.api_key or "not-needed",
        role.timeout_s,
        max_tokens,
        temperature=temperature,
        response_format=response_format if role.constrain_json else None,
    )


def add_catalog_args(parser: argparse.ArgumentParser, *, bundled: bool = True) -> None:
    """``--catalog`` (and ``--no-bundled`` where the bundled servers may be left out)."""
    help_text = "a catalogue or mcpServers JSON file (repeatable)"
    parser.add_argument("--catalog", action="append", required=not bundled, help=help_text)
    if bundled:
        parser.add_argument(
            "--no-bundled", action="store_true", help="leave out the bundled servers and mcp.json"
        )
