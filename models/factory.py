"""Per-role chat models over OpenAI-compatible endpoints (``langchain-openai``)."""

from __future__ import annotations

import logging

from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI

from models.config import ModelSettings, Role

log = logging.getLogger(__name__)


class ModelUnavailableError(RuntimeError):
    """No usable endpoint for a role (none configured, or the local server cannot start)."""


def resolve_base_url(role: Role, settings: ModelSettings) -> str:
    """The base URL a role talks to, starting the embedded local server when the role uses it."""
    role_settings = settings.role(role)
    if not role_settings.is_local:
        return role_settings.base_url
    try:
        from models.local_server import ensure_server
    except ImportError as exc:  # pragma: no cover - the module ships with the project
        raise ModelUnavailableError(f"the embedded local model server is unavailable: {exc}") from exc
    return ensure_server(settings)


def build_chat_model(role: Role, settings: ModelSettings) -> BaseChatModel:
    """Build the chat model of one role from its settings.

    Raises:
        ModelUnavailableError: When the role's endpoint cannot be resolved.
    """
    role_settings = settings.role(role)
    base_url = resolve_base_url(role, settings)
    log.debug("role %s -> %s at %s", role, role_settings.model, base_url)
    return ChatOpenAI(
        model=role_settings.model,
        base_url=base_url,
        api_key=role_settings.api_key or "not-needed",
        temperature=role_settings.temperature,
        max_tokens=role_settings.max_tokens,
        timeout=role_settings.timeout_s,
        max_retries=1,
        streaming=role == "writer",
    )
