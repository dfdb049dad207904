"""Settings read from the environment: each field names its variable, and one reader reads them.

A group of settings is a :class:`SettingsGroup` whose fields are declared with :func:`setting`:
the environment variables that set the field, its meaning (the field's description) and, where
the default depends on the machine, the default as the docs show it. A group may name every
field's variable by a prefix (``env_prefix``), and may be read from the environment only
(``env_only``: the processes that use it read no config file). :func:`load_group` validates a
group from a config file table and the environment, the environment winning, and turns a bad
value into one :class:`ConfigError` line that names the variable.

Nothing else reads ``os.environ`` for configuration: the loaders of ``models/config.py``,
``tools/web/config.py`` and ``core/settings.py`` read it through :func:`environment`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from models.config_files import ConfigError

Group = TypeVar("Group", bound=BaseModel)


def setting(
    default: Any = PydanticUndefined,
    *,
    doc: str,
    env: str | tuple[str, ...] = (),
    shown: str | None = None,
    key: str | None = None,
    env_only: bool = False,
    keep_empty: bool = False,
    **constraints: Any,
) -> Any:
    """A settings field.

    Args:
        default: The built-in default (or pass ``default_factory``).
        doc: What the setting means, in one line (the docs' table shows it).
        env: The variables that set it; a later one wins over an earlier one.
        shown: The default as the docs show it, when the value depends on the machine.
        key: Its key in the config file, when that is not the field's own path.
        env_only: Read from the environment only, never from the config file.
        keep_empty: An empty variable is a value (not the same as unset).
        constraints: Passed to :func:`pydantic.Field` (``ge``, ``gt``, ``default_factory``…).
    """
    extra: dict[str, Any] = {"env": [env] if isinstance(env, str) else list(env)}
    if shown is not None:
        extra["shown"] = shown
    if key is not None:
        extra["key"] = key
    if env_only:
        extra["env_only"] = True
    if keep_empty:
        extra["keep_empty"] = True
    return Field(default, description=doc, json_schema_extra=extra, **constraints)


class SettingsGroup(BaseModel):
    """A group of settings: ``env_prefix`` names the variable of each field that names none."""

    env_prefix: ClassVar[str] = ""
    env_only: ClassVar[bool] = False


def field_extra(field: FieldInfo) -> dict[str, Any]:
    """The metadata :func:`setting` stored on ``field`` (empty for a plain field)."""
    extra = field.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def env_names(group: type[BaseModel], name: str) -> list[str]:
    """The environment variables of field ``name`` of ``group``, the winning one last."""
    names = [str(item) for item in field_extra(group.model_fields[name]).get("env") or []]
    prefix = getattr(group, "env_prefix", "")
    return names or ([prefix + name.upper()] if prefix else [])


def environment(env: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """``env``, or the process environment when None."""
    return os.environ if env is None else env


def env_values(group: type[BaseModel], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values the environment gives ``group``'s fields (stripped; an empty variable is unset)."""
    env = environment(env)
    values: dict[str, str] = {}
    for name, field in group.model_fields.items():
        for variable in env_names(group, name):
            raw = env.get(variable)
            if raw is not None and (raw.strip() or field_extra(field).get("keep_empty")):
                values[name] = raw.strip()
    return values


def error_line(exc: ValidationError, group: type[BaseModel], env: Mapping[str, str], key: str = "") -> str:
    """The errors of ``exc`` on one line: ``key: problem``, with the variable that set the key."""
    parts = []
    for error in exc.errors(include_url=False):
        location = [str(item) for item in error["loc"]]
        name = location[0] if location else ""
        where = ".".join([key] * bool(key) + location)
        names = env_names(group, name) if name in group.model_fields else []
        variables = [variable for variable in names if env.get(variable, "").strip()]
        if variables:
            where += f" ({variables[-1]}={env[variables[-1]].strip()!r})"
        parts.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "; ".join(parts)


def load_group(
    group: type[Group],
    env: Mapping[str, str] | None = None,
    table: Mapping[str, Any] | None = None,
    *,
    where: str = "",
    key: str = "",
) -> Group:
    """``group`` from a config file ``table`` with the environment winning.

    Args:
        group: The settings group.
        env: The environment (default ``os.environ``).
        table: The group's table of the config file (none for an environment-only group).
        where: The file and table, for the message (``config.toml [budgets]``).
        key: The group's key, put before each field's name in the message (``budgets``).

    Raises:
        ConfigError: On an invalid value, in one line naming its key and the variable that set it.
    """
    env = environment(env)
    try:
        return group.model_validate({**(table or {}), **env_values(group, env)})
    except ValidationError as exc:
        source = f"{where} + environment" if where else "environment"
        raise ConfigError(f"invalid configuration ({source}): {error_line(exc, group, env, key)}") from None


class Directories(SettingsGroup):
    """Where aisearch keeps what it downloads, assembles and trains."""

    env_only: ClassVar[bool] = True

    cache_dir: Path = setting(
        Path("~/.cache/aisearch"),
        env="AISEARCH_CACHE_DIR",
        shown="`~/.cache/aisearch`",
        doc="the llama.cpp wheel cache, the assembled GGUF models and the servers' state",
    )
    distill_dir: Path | None = setting(
        None,
        env="AISEARCH_DISTILL_DIR",
        shown="`<cache_dir>/distill`",
        doc="the distillation's trajectories, training run and exported GGUF (an exported one becomes "
        "the executor's default model)",
    )


def directories(env: Mapping[str, str] | None = None) -> Directories:
    """The cache folders, from the environment.

    Raises:
        ConfigError: A path that is not one.
    """
    return load_group(Directories, env, key="directories")
