"""Reading the user's configuration files so that every fault is one line naming the file, and
writing a JSON file so that a crash never leaves half of one.

The TOML config, the ``mcpServers`` JSON and the tool catalogues are written by hand: they may be
a directory, unreadable, not UTF-8, or of the wrong shape. :func:`read_config_text` turns the
first three into the caller's error class, and :func:`validation_line` turns a Pydantic
validation error about the shape into one line (``models: Input should be a valid dictionary``).
:func:`write_json_atomically` replaces a JSON file (the ``mcpServers`` file, an export's manifest)
in one rename.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError


class ConfigError(ValueError):
    """The configuration file or environment holds an invalid value."""


def read_config_text(path: Path, what: str, error: type[Exception]) -> str:
    """The UTF-8 text of the file at ``path``.

    Args:
        path: The file.
        what: What the file is, for the message (``config file``, ``MCP server config``).
        error: The exception class to raise.

    Raises:
        error: When the file is missing, a directory, unreadable or not UTF-8 (one line).
    """
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise error(f"{what} {path} is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} {path} is not valid UTF-8 (byte {exc.object[exc.start]:#04x} at offset {exc.start})"
        ) from None
    except OSError as exc:
        raise error(f"{what} {path} cannot be read: {exc.strerror or exc}") from None


def validation_line(exc: ValidationError, prefix: str = "") -> str:
    """The errors of ``exc`` on one line: ``where: what`` for each, ``;``-separated.

    Args:
        exc: The validation error.
        prefix: Put before each location (``mcpServers.files`` gives ``mcpServers.files.args``).
    """
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join([prefix] * bool(prefix) + [str(item) for item in error["loc"]])
        parts.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "; ".join(parts)


def write_json_atomically(path: Path, document: Any) -> None:
    """Write ``document`` (indented, UTF-8, a final newline) to a temporary file beside ``path``, then
    rename it over ``path``: a crash leaves the old file or the new one; the temporary file is
    removed when anything fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
