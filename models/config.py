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
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from models.config_files import ConfigError as ConfigError
from models.config_files import read_config_text, validation_line
from models.distilled import DISTILLED_ALIAS, distilled_available
from models.env_settings import SettingsGroup, env_names, environment, load_group, setting

Role = Literal["master", "planner", "executor", "writer", "reader"]
ServerKind = Literal["llama-cpp-python", "llama-server"]
ROLES: tuple[Role, ...] = ("master", "planner", "executor", "writer", "reader")
# the hop reader (a chain hop's answer in a few words, ``agents/hop_read.py``) reads with the
# Writer's settings unless ``[models.reader]`` or ``AISEARCH_READER_*`` name its own: a reader
# fine-tuned for hops (``aisearch distill reader-examples``, then ``train``) need not be the Writer's model
INHERITS: dict[Role, Role] = {"reader": "writer"}
LOCAL = "local"
CONFIG_ENV = "AISEARCH_CONFIG"

DEFAULT_MODELS: dict[Role, str] = {
    "master": "qwen2.5-coder-1.5b-instruct",
    "planner": "qwen2.5-coder-1.5b-instruct",
    "executor": "qwen2.5-coder-0.5b-instruct",
    "writer": "qwen2.5-coder-1.5b-instruct",
}  # a role of INHERITS takes its parent's
DEFAULT_MAX_TOKENS: dict[Role, int] = {"master": 256, "planner": 768, "executor": 256, "writer": 768}
# the prose roles keep llama-cpp-python's default, which their prompts were tuned with; the
# executor's replies are tool calls in JSON, which repeat their prompt's own format line: a penalty
# on those tokens turned a distilled 0.5B's calls into empty lists (docs/results.md, 2026-11-30)
DEFAULT_REPEAT_PENALTY: dict[Role, float] = {"master": 1.1, "planner": 1.1, "executor": 1.0, "writer": 1.1}


class RoleSettings(SettingsGroup):
    """How one role reaches its chat model (``[models.default]``, ``[models.<role>]``)."""

    model: str = setting(
        env=("AISEARCH_MODEL", "AISEARCH_{ROLE}_MODEL"),
        shown=(
            "`qwen2.5-coder-1.5b-instruct` (master, planner, writer), "
            "`qwen2.5-coder-0.5b-instruct` (executor), the writer's (reader)"
        ),
        doc="the model name the endpoint serves, or the path of a `.gguf` file for the local server",
    )
    base_url: str = setting(
        LOCAL,
        env=("AISEARCH_BASE_URL", "AISEARCH_{ROLE}_BASE_URL"),
        doc="an OpenAI-compatible `/v1` URL; `local` is the embedded llama.cpp server aisearch starts itself",
    )
    api_key: str | None = setting(
        None,
        env=("AISEARCH_API_KEY", "AISEARCH_{ROLE}_API_KEY"),
        doc="the endpoint's key; masked by `config show`, never logged",
    )
    temperature: float = setting(0.0, doc="sampling temperature")
    max_tokens: int = setting(
        512,
        shown="256 (master, executor), 768 (planner, writer), the writer's (reader)",
        doc="the reply's token limit (sent as `max_tokens` and `max_completion_tokens`)",
    )
    timeout_s: float = setting(180.0, gt=0, doc="seconds per model call")
    repeat_penalty: float = setting(
        1.1,
        gt=0,
        shown="1.0 (executor), 1.1 (master, planner, writer), the writer's (reader)",
        doc="llama.cpp's repeat penalty (1.0: none), sent as `repeat_penalty` to the embedded local server only",
    )
    json_schema: bool | None = setting(
        None,
        shown="on for `local`, off otherwise",
        doc="send `response_format` with a JSON schema for structured calls (llama.cpp grammars)",
    )

    @property
    def is_local(self) -> bool:
        """Whether this role uses the embedded local model server."""
        return self.base_url == LOCAL

    @property
    def sent_repeat_penalty(self) -> float | None:
        """The repeat penalty this role's calls send: the embedded server's option, None for a
        remote endpoint (which may refuse a field it does not know)."""
        return self.repeat_penalty if self.is_local else None

    @property
    def constrain_json(self) -> bool:
        """Send ``response_format`` with a JSON schema (llama.cpp grammars); default on when local."""
        return self.is_local if self.json_schema is None else self.json_schema


class LocalServerSettings(SettingsGroup):
    """The embedded llama.cpp server, used by roles whose ``base_url`` is ``local`` (see
    ``models/server_spec.py``); a role's ``model`` may also be a path to a ``.gguf`` file."""

    env_prefix: ClassVar[str] = "AISEARCH_LOCAL_"

    host: str = setting("127.0.0.1", doc="address the server binds to")
    port: int = setting(0, doc="port; 0 picks a free one")
    n_threads: int = setting(
        max(1, min(os.cpu_count() or 2, 4)), ge=1, shown="the CPU count, at most 4", doc="llama.cpp threads"
    )
    n_ctx: int = setting(4096, ge=512, doc="context length per model")
    prompt_cache_bytes: int = setting(1 << 30, ge=0, doc="RAM prompt cache per model (1 GiB); 0 turns it off")
    start_timeout_s: float = setting(180.0, gt=0, doc="seconds to wait for the server to become healthy")
    idle_minutes: float = setting(
        30.0,
        ge=0,
        doc="the server exits after this long without a request (and gives its memory back); 0: never",
    )
    chat_format: str = setting(
        "chatml-function-calling",
        doc="llama-cpp-python chat handler (this one gives OpenAI `tool_calls` and JSON-schema `response_format`)",
    )
    server: ServerKind = setting(
        "llama-server",
        doc="the program serving the models: `llama-server` (llama.cpp's own, built once by the set-up), or "
        "`llama-cpp-python` ([local-models.md](local-models.md#two-servers-llama-server-or-llama-cpp-python))",
    )
    parallel: int = setting(
        4, ge=1, doc="llama-server: requests served at once per model (continuous batching)"
    )
    llama_server_bin: Path | None = setting(
        None, shown="`<cache_dir>/llama-server/0.3.36/llama-server`", doc="llama-server: the binary to run"
    )
    chat_template: str = setting(
        "chatml",
        doc="llama-server: a built-in chat template (`chatml` formats prompts as llama-cpp-python does); "
        "empty: the model's own",
        keep_empty=True,
    )
    keep_running: bool = setting(
        True, doc="leave a server a one-shot command started running for the next command, until it is idle"
    )
    resident_models: bool = setting(
        True, doc="keep every served model loaded (no reload when roles alternate)"
    )
    gguf: dict[str, str] = setting(
        default_factory=dict,
        shown="none",
        doc="your own GGUF files by alias (`[local.gguf]`, or `alias=path;alias2=path` in the variable)",
    )

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


class RerankSettings(SettingsGroup):
    """The model of docsearch's optional LLM rerank (default: the executor role's endpoint and model)."""

    env_prefix: ClassVar[str] = "AISEARCH_RERANK_"
    env_only: ClassVar[bool] = True

    base_url: str = setting("", shown="the executor's", doc="the rerank model's OpenAI-compatible endpoint")
    model: str = setting("", shown="the executor's", doc="the rerank model (used only with `base_url`)")
    api_key: SecretStr | None = setting(None, doc="the rerank endpoint's key (sent to that endpoint only)")


class ModelSettings(SettingsGroup):
    """How every role reaches its chat model, and the embedded local server."""

    config_file: Path | None = setting(
        None,
        env=CONFIG_ENV,
        env_only=True,
        shown="`~/.config/aisearch/config.toml`",
        doc="the config file (`--config FILE` wins); an explicitly named file must exist",
    )
    roles: dict[Role, RoleSettings]
    local: LocalServerSettings = LocalServerSettings()
    rerank: RerankSettings = RerankSettings()

    def role(self, role: Role) -> RoleSettings:
        """The settings of one role; a role of :data:`INHERITS` left out is its parent's."""
        if role not in self.roles and role in INHERITS:
            return self.role(INHERITS[role])
        return self.roles[role]


def default_config_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the config file is looked for when no path is given."""
    env = environment(env)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser()
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
    """A role's values: its defaults, ``[models.default]``, ``[models.<role>]``, the all-roles
    variables, then the role's own; a role that inherits (:data:`INHERITS`) starts from the
    values of the role it inherits and adds only its own table and variables."""
    parent = INHERITS.get(role)
    if parent is None:
        values: dict[str, Any] = {
            "model": default_model(role),
            "max_tokens": DEFAULT_MAX_TOKENS[role],
            "repeat_penalty": DEFAULT_REPEAT_PENALTY[role],
        }
        values.update(file_models.get("default", {}))
    else:
        values = _role_values(parent, file_models, env)
    values.update(file_models.get(role, {}))
    for field in RoleSettings.model_fields:
        for name in env_names(RoleSettings, field):  # the role's own variable last: it wins
            if parent is not None and "{ROLE}" not in name:
                continue  # the all-roles variables are in the parent's values already
            value = env.get(name.format(ROLE=role.upper()), "").strip()
            if value:
                values[field] = value
    return values


def read_config(config_path: Path | str | None, env: Mapping[str, str]) -> tuple[Path, dict[str, Any]]:
    """The config file's path and content (empty when the default file does not exist).

    Raises:
        ConfigError: On a missing explicit file or invalid TOML.
    """
    explicit = config_path is not None or bool(env.get(CONFIG_ENV))
    path = Path(config_path).expanduser() if config_path is not None else default_config_path(env)
    return path, _read_toml(path, explicit)


def model_values(path: Path, data: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The model settings' values from the config file, the environment winning.

    Raises:
        ConfigError: On a role name the file should not hold, or an invalid server setting.
    """
    file_models = data.get("models", {})
    unknown = set(file_models) - {"default", *ROLES}
    if unknown:
        raise ConfigError(f"{path}: unknown role(s) under [models]: {sorted(unknown)}")
    return {
        "config_file": path if path.exists() else None,
        "roles": {role: _role_values(role, file_models, env) for role in ROLES},
        "local": load_group(
            LocalServerSettings, env, data.get("local"), where=f"{path} [local]", key="local"
        ),
        "rerank": load_group(RerankSettings, env, key="rerank"),
    }


def load_model_settings(
    config_path: Path | str | None = None, env: Mapping[str, str] | None = None
) -> ModelSettings:
    """The model settings alone: defaults, then the config file, then the environment.

    Raises:
        ConfigError: On a missing explicit file, invalid TOML or an invalid value.
    """
    env = environment(env)
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
