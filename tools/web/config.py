"""The web search settings: the ``[websearch]`` table of the config file, then the environment.

::

    [websearch]
    provider = "searxng"              # searxng | tavily | brave (default: searxng when a URL is set)
    searxng_url = "http://127.0.0.1:8888"
    allow_hosts = ["127.0.0.1:8888"]  # host or host:port fetched although private or loopback
    max_pages = 6                     # pages fetched per run
    timeout_s = 10
    max_page_bytes = 2000000

Environment (wins over the file): ``AISEARCH_SEARXNG_URL``, ``AISEARCH_WEB_PROVIDER``,
``AISEARCH_WEB_ALLOW_HOSTS`` (comma-separated), ``AISEARCH_WEB_MAX_PAGES``,
``AISEARCH_WEB_TIMEOUT_S``, ``AISEARCH_WEB_MAX_PAGE_BYTES``, ``AISEARCH_WEB_CACHE_DIR``, and the
keys ``TAVILY_API_KEY`` and ``BRAVE_API_KEY`` (also ``tavily_api_key``/``brave_api_key`` in the
file). Web search is off until a provider can be used: a SearxNG URL or the chosen provider's key.

The ``websearch`` server reads the same variables: :meth:`WebSearchConfig.server_env` writes them,
with the chosen provider's key only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator

from models.config import ConfigError, read_config
from models.config_files import validation_line

Provider = Literal["searxng", "tavily", "brave"]
KEY_ENV: dict[str, str] = {"tavily": "TAVILY_API_KEY", "brave": "BRAVE_API_KEY"}
ENV_FIELDS: dict[str, str] = {
    "AISEARCH_SEARXNG_URL": "searxng_url",
    "AISEARCH_WEB_PROVIDER": "provider",
    "AISEARCH_WEB_ALLOW_HOSTS": "allow_hosts",
    "AISEARCH_WEB_MAX_PAGES": "max_pages",
    "AISEARCH_WEB_TIMEOUT_S": "timeout_s",
    "AISEARCH_WEB_MAX_PAGE_BYTES": "max_page_bytes",
    "AISEARCH_WEB_CACHE_DIR": "cache_dir",
    "TAVILY_API_KEY": "tavily_api_key",
    "BRAVE_API_KEY": "brave_api_key",
}
DEFAULT_CACHE_DIR = "~/.cache/aisearch/web"


class WebSearchConfig(BaseModel):
    """Which search provider the ``websearch`` server uses and how it fetches pages."""

    provider: Provider | None = None
    searxng_url: str = ""
    tavily_api_key: SecretStr | None = None
    brave_api_key: SecretStr | None = None
    # hosts (or host:port) fetched although they resolve to loopback, private or link-local addresses
    allow_hosts: list[str] = Field(default_factory=list)
    max_pages: int = Field(default=6, ge=0)  # pages fetched per run (one server process per run)
    timeout_s: float = Field(default=10.0, gt=0)  # per search or page request
    max_page_bytes: int = Field(default=2_000_000, gt=0)  # a page larger than this is cut there
    cache_dir: Path = Path(DEFAULT_CACHE_DIR).expanduser()

    @field_validator("allow_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("cache_dir", mode="after")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @property
    def chosen(self) -> Provider | None:
        """The provider in use: the one named, else SearxNG when its URL is set, else a keyed one."""
        if self.provider:
            return self.provider
        if self.searxng_url:
            return "searxng"
        for name in ("tavily", "brave"):
            if self.key(name):
                return name
        return None

    @property
    def enabled(self) -> bool:
        """Whether the chosen provider can be used (a SearxNG URL, or the keyed provider's key)."""
        chosen = self.chosen
        if chosen == "searxng":
            return bool(self.searxng_url)
        return chosen is not None and bool(self.key(chosen))

    def key(self, provider: str) -> str:
        """The API key of a keyed provider ("" when none)."""
        secret = self.tavily_api_key if provider == "tavily" else self.brave_api_key
        return secret.get_secret_value() if secret is not None and provider in KEY_ENV else ""

    def server_env(self) -> dict[str, str]:
        """The variables the ``websearch`` server reads: these settings, and only the chosen
        provider's key."""
        chosen = self.chosen or ""
        env = {
            "AISEARCH_WEB_PROVIDER": chosen,
            "AISEARCH_WEB_ALLOW_HOSTS": ",".join(self.allow_hosts),
            "AISEARCH_WEB_MAX_PAGES": str(self.max_pages),
            "AISEARCH_WEB_TIMEOUT_S": str(self.timeout_s),
            "AISEARCH_WEB_MAX_PAGE_BYTES": str(self.max_page_bytes),
            "AISEARCH_WEB_CACHE_DIR": str(self.cache_dir),
        }
        if chosen == "searxng":
            env["AISEARCH_SEARXNG_URL"] = self.searxng_url
        elif chosen in KEY_ENV:
            env[KEY_ENV[chosen]] = self.key(chosen)
        return env


def web_config(
    table: Mapping[str, Any], env: Mapping[str, str], where: str = "[websearch]"
) -> WebSearchConfig:
    """The settings from a ``[websearch]`` table with the environment winning.

    Raises:
        ConfigError: On an unknown provider, a malformed number or list, in one line.
    """
    values = dict(table)
    for variable, name in ENV_FIELDS.items():
        if env.get(variable, "").strip():
            values[name] = env[variable].strip()
    try:
        return WebSearchConfig.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(
            f"invalid web search settings ({where} + environment): {validation_line(exc)}"
        ) from None


def load_web_config(env: Mapping[str, str] | None = None) -> WebSearchConfig:
    """The web search settings of the config file (``$AISEARCH_CONFIG`` or the default) and the
    environment.

    Raises:
        ConfigError: As :func:`web_config`, or on an unreadable config file.
    """
    env = os.environ if env is None else env
    path, data = read_config(None, env)
    table = data.get("websearch", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [websearch] must be a table")
    return web_config(table, env, f"{path} [websearch]")
