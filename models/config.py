"""Model settings: per-role chat models and the embedded local server, from a TOML file and the environment.

The run-wide settings (budgets, paths, tool selection) build on these in ``core/settings.py``;
:func:`read_config` and :func:`model_values` are shared with it so the file is read one way.

Precedence (highest first): environment variables, the config file, built-in defaults.

Config file: ``$AISEARCH_CONFIG`` or ``~/.config/aisearch/config.toml``::

    [models.default]            # applies to every role unless the role overrides it
    base_url = "http://127.0.0.1:8080/v1"
    model = "qwen2.5-coder-1.5b"

    [models.executor]
    model = "qwen2.5-coder-0.5b"

    [budgets]
    max_replans = 2

    [paths]
    db = "~/.local/share/aisearch/threads.sqlite"
    mcp_config = "./mcp.json"

Environment: ``AISEARCH_<ROLE>_MODEL``, ``AISEARCH_<ROLE>_BASE_URL``, ``AISEARCH_<ROLE>_API_KEY``
(role-specific), ``AISEARCH_MODEL``, ``AISEARCH_BASE_URL``, ``AISEARCH_API_KEY`` (every role),
``AISEARCH_LOCAL_<NAME>`` (the local server).

A ``base_url`` of ``local`` (the default) means the embedded llama.cpp server that aisearch
starts itself.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from models.config_files import read_config_text, validation_line
from models.distilled import DISTILLED_ALIAS, distilled_available

Role = Literal["master", "planner", "executor", "writer"]
ServerKind = Literal["llama-cpp-python", "llama-server"]
ROLES: tuple[Role, ...] = ("master", "planner", "executor", "writer")
LOCAL = "local"

DEFAULT_MODELS: dict[Role, str] = {
    "master": "qwen2.5-coder-1.5b-instruct",
    "planner": "qwen2.5-coder-1.5b-instruct",
    "executor": "qwen2.5-coder-0.5b-instruct",
    "writer": "qwen2.5-coder-1.5b-instruct",
}
DEFAULT_MAX_TOKENS: dict[Role, int] = {"master": 256, "planner": 768, "executor": 256, "writer": 768}


class ConfigError(ValueError):
    """The configuration file or environment holds an invalid value."""


class RoleSettings(BaseModel):
    """How one role reaches its chat model."""

    model: str
    base_url: str = LOCAL
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    timeout_s: float = Field(default=180.0, gt=0)
    json_schema: bool | None = None

    @property
    def is_local(self) -> bool:
        """Whether this role uses the embedded local model server."""
        return self.base_url == LOCAL

    @property
    def constrain_json(self) -> bool:
        """Send ``response_format`` with a JSON schema (llama.cpp grammars); default on when local."""
        return self.is_local if self.json_schema is None else self.json_schema


class LocalServerSettings(BaseModel):
    """The embedded llama.cpp server (used by roles whose base_url is ``local``).

    ``server``: the program that serves the models: ``llama-cpp-python`` (its Python server, one
    request at a time) or ``llama-server`` (llama.cpp's own, built by ``scripts/build_llama_server.sh``:
    ``parallel`` requests at once per model with continuous batching; ``llama_server_bin`` overrides
    where its binary is; ``chat_template`` is its built-in template, ``chatml`` formatting prompts as
    llama-cpp-python does). ``chat_format``: llama-cpp-python's chat handler
    (``chatml-function-calling`` gives OpenAI ``tool_calls`` and JSON-schema ``response_format``).
    ``keep_running``: leave a server that a one-shot command started running for reuse, until it has
    had no request for ``idle_minutes`` (it then exits and gives its memory back; the next run starts
    it again). ``resident_models``: keep every served model loaded (no reload when roles alternate).
    ``gguf``: alias -> path of your own GGUF files (``[local.gguf]`` or
    ``AISEARCH_LOCAL_GGUF="alias=path;alias2=path"``); a role's ``model`` may also be a path to a
    ``.gguf`` file. See ``models/server_spec.py``.
    """

    host: str = "127.0.0.1"
    port: int = 0
    n_threads: int = Field(default=max(1, min(os.cpu_count() or 2, 4)), ge=1)
    n_ctx: int = Field(default=4096, ge=512)
    prompt_cache_bytes: int = Field(default=1 << 30, ge=0)  # per model; 0 turns the prompt cache off
    start_timeout_s: float = Field(default=180.0, gt=0)
    idle_minutes: float = Field(default=30.0, ge=0)  # exit after this long without a request; 0: never
    chat_format: str = "chatml-function-calling"
    server: ServerKind = "llama-cpp-python"
    parallel: int = Field(default=4, ge=1)  # llama-server: requests served at once per model
    llama_server_bin: str = ""  # llama-server: the binary; empty: the one the set-up builds
    chat_template: str = "chatml"  # llama-server: a built-in template name; empty: the model's own
    keep_running: bool = True
    resident_models: bool = True
    gguf: dict[str, str] = Field(default_factory=dict)

    @field_validator("gguf", mode="before")
    @classmethod
    def _parse_gguf(cls, value: Any) -> Any:
        """Accept ``alias=path`` pairs separated by ``;`` or ``,`` (for ``AISEARCH_LOCAL_GGUF``)."""
        if isinstance(value, str):
            pairs = [item.split("=", 1) for item in value.replace(";", ",").split(",") if item.strip()]
            if any(len(pair) != 2 for pair in pairs):
                raise ValueError("expected alias=path pairs separated by ';' or ','")
            return {alias.strip(): path.strip() for alias, path in pairs}
        return value


class ModelSettings(BaseModel):
    """How every role reaches its chat model, and the embedded local server."""

    roles: dict[Role, RoleSettings]
    local: LocalServerSettings = LocalServerSettings()

    def role(self, role: Role) -> RoleSettings:
        """Return the settings of one role."""
        return self.roles[role]


def default_config_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the config file is looked for when no path is given."""
    env = os.environ if env is None else env
    if env.get("AISEARCH_CONFIG"):
        return Path(env["AISEARCH_CONFIG"]).expanduser()
    return Path("~/.config/aisearch/config.toml").expanduser()


Table = dict[str, Any]


class ConfigPaths(BaseModel):
    """The ``[paths]`` table's shape."""

    model_config = ConfigDict(extra="allow")

    db: str | None = None
    mcp_config: str | None = None
    tool_catalogs: str | list[str] | None = None


class ConfigFile(BaseModel):
    """The config file's shape: which keys hold tables (their values are checked with the settings)."""

    model_config = ConfigDict(extra="allow")

    models: dict[str, Table] = Field(default_factory=dict)
    local: Table = Field(default_factory=dict)
    budgets: Table = Field(default_factory=dict)
    docs_server: Table = Field(default_factory=dict)
    cache: Table = Field(default_factory=dict)
    paths: ConfigPaths = ConfigPaths()


def _read_toml(path: Path, explicit: bool) -> dict[str, Any]:
    if not explicit and not path.exists():
        return {}
    text = read_config_text(path, "config file", ConfigError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    try:
        ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"config file {path}: {validation_line(exc)}") from None
    return data


def default_model(role: Role) -> str:
    """A role's model when nothing names one: the distilled executor once it is exported."""
    if role == "executor" and distilled_available():
        return DISTILLED_ALIAS
    return DEFAULT_MODELS[role]


def _role_values(role: Role, file_models: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {"model": default_model(role), "max_tokens": DEFAULT_MAX_TOKENS[role]}
    values.update(file_models.get("default", {}))
    values.update(file_models.get(role, {}))
    for field in ("model", "base_url", "api_key"):
        for name in (f"AISEARCH_{field.upper()}", f"AISEARCH_{role.upper()}_{field.upper()}"):
            if env.get(name):
                values[field] = env[name]
    return values


def read_config(config_path: Path | str | None, env: Mapping[str, str]) -> tuple[Path, dict[str, Any]]:
    """The config file's path and content (empty when the default file does not exist).

    Raises:
        ConfigError: On a missing explicit file or invalid TOML.
    """
    explicit = config_path is not None or bool(env.get("AISEARCH_CONFIG"))
    path = Path(config_path).expanduser() if config_path is not None else default_config_path(env)
    return path, _read_toml(path, explicit)


def model_values(path: Path, data: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The ``roles`` and ``local`` values of the config file, the environment winning.

    Raises:
        ConfigError: On a role name the file should not hold.
    """
    file_models = data.get("models", {})
    unknown = set(file_models) - {"default", *ROLES}
    if unknown:
        raise ConfigError(f"{path}: unknown role(s) under [models]: {sorted(unknown)}")
    local = dict(data.get("local", {}))
    for name in LocalServerSettings.model_fields:
        if env.get(f"AISEARCH_LOCAL_{name.upper()}"):
            local[name] = env[f"AISEARCH_LOCAL_{name.upper()}"]
    return {"roles": {role: _role_values(role, file_models, env) for role in ROLES}, "local": local}


def load_model_settings(
    config_path: Path | str | None = None, env: Mapping[str, str] | None = None
) -> ModelSettings:
    """The model settings alone: defaults, then the config file, then the environment.

    Raises:
        ConfigError: On a missing explicit file, invalid TOML or an invalid value.
    """
    env = os.environ if env is None else env
    path, data = read_config(config_path, env)
    try:
        return ModelSettings.model_validate(model_values(path, data, env))
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration ({path} + environment): {validation_line(exc)}") from None


def masked(settings: ModelSettings) -> dict[str, Any]:
    """The settings as plain data with secrets masked, for ``aisearch config show``."""
    data = settings.model_dump(mode="json")
    for role in data["roles"].values():
        key = role.get("api_key")
        if key:
            role["api_key"] = key[:3] + "…" + "*" * 4 if len(key) > 8 else "****"
    return data
