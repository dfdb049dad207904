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

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import SecretStr, field_validator

from models.config import ConfigError, read_config
from models.env_settings import SettingsGroup, environment, load_group, setting

Provider = Literal["searxng", "tavily", "brave"]
KEY_ENV: dict[str, str] = {"tavily": "TAVILY_API_KEY", "brave": "BRAVE_API_KEY"}
DEFAULT_CACHE_DIR = "~/.cache/aisearch/web"


class WebSearchConfig(SettingsGroup):
    """Which search provider the ``websearch`` server uses and how it fetches pages."""

    provider: Provider | None = setting(
        None,
        env="AISEARCH_WEB_PROVIDER",
        shown="`searxng` when a URL is set, else the keyed provider with a key",
        doc="`searxng`, `tavily` or `brave`",
    )
    searxng_url: str = setting(
        "",
        env="AISEARCH_SEARXNG_URL",
        shown="none",
        doc="a SearxNG instance (its JSON format enabled); setting it turns web search on",
    )
    tavily_api_key: SecretStr | None = setting(
        None, env=KEY_ENV["tavily"], doc="Tavily's key (sent to Tavily only)"
    )
    brave_api_key: SecretStr | None = setting(
        None, env=KEY_ENV["brave"], doc="Brave Search's key (sent to Brave only)"
    )
    allow_hosts: list[str] = setting(
        default_factory=list,
        env="AISEARCH_WEB_ALLOW_HOSTS",
        shown="none",
        doc="`host` or `host:port` (comma-separated) on loopback or private addresses that pages may be read from",
    )
    max_pages: int = setting(
        6, ge=0, env="AISEARCH_WEB_MAX_PAGES", doc="page downloads per run (cached pages are free)"
    )
    timeout_s: float = setting(
        10.0, gt=0, env="AISEARCH_WEB_TIMEOUT_S", doc="seconds per search and per page, redirects included"
    )
    max_page_bytes: int = setting(
        2_000_000, gt=0, env="AISEARCH_WEB_MAX_PAGE_BYTES", doc="a page is cut after this many bytes"
    )
    cache_dir: Path = setting(
        Path(DEFAULT_CACHE_DIR),
        env="AISEARCH_WEB_CACHE_DIR",
        shown=f"`{DEFAULT_CACHE_DIR}`",
        doc="extracted pages, kept for a day",
    )

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
    table: Mapping[str, Any], env: Mapping[str, str] | None = None, where: str = "[websearch]"
) -> WebSearchConfig:
    """The settings from a ``[websearch]`` table with the environment winning.

    Raises:
        ConfigError: On an unknown provider, a malformed number or list, in one line.
    """
    return load_group(WebSearchConfig, env, table, where=where, key="websearch")


def load_web_config(env: Mapping[str, str] | None = None) -> WebSearchConfig:
    """The web search settings of the config file (``$AISEARCH_CONFIG`` or the default) and the
    environment.

    Raises:
        ConfigError: As :func:`web_config`, or on an unreadable config file.
    """
    env = environment(env)
    path, data = read_config(None, env)
    table = data.get("websearch", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [websearch] must be a table")
    return web_config(table, env, f"{path} [websearch]")
