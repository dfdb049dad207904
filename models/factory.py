"""Per-role chat models over OpenAI-compatible endpoints (``langchain-openai``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from models.config import ModelSettings, RerankSettings, Role, load_model_settings
from models.env_settings import load_group

log = logging.getLogger(__name__)

ChatFn = Callable[[list[dict[str, str]]], str]
"""A plain chat function: OpenAI-style messages in, the reply's text out (the reranker's model)."""


class CompatibleChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` for OpenAI-compatible servers: the output limit also goes as ``max_tokens``,
    and a call's ``extra_body`` adds to the model's instead of replacing it.

    langchain-openai sends the limit only as ``max_completion_tokens`` (OpenAI's newer name);
    llama.cpp's servers (llama-cpp-python, llama-server) and other compatible servers read
    ``max_tokens`` and silently ignore the other, so without this every role's limit, and every
    ``bind(max_tokens=…)``, was no limit at all. OpenAI's own API keeps the single new name.
    langchain-openai also lets a bound ``extra_body`` (a schema-constrained call's
    ``response_format``) drop the model's own (``cache_prompt: false``); here both are sent.
    """

    def _get_request_payload(
        self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        bound = kwargs.get("extra_body")
        if bound is not None and self.extra_body:
            kwargs["extra_body"] = {**self.extra_body, **bound}
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        limit = payload.get("max_completion_tokens")
        if limit is not None and "api.openai.com" not in str(self.openai_api_base or ""):
            payload["max_tokens"] = limit
        return payload


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


def local_http_clients(settings: ModelSettings) -> dict[str, Any]:
    """``ChatOpenAI``'s HTTP clients for the embedded local server: a server that died mid-run is
    started again, and no connection is reused (``models/server_revival.py`` says why)."""
    from models.server_revival import AsyncRevivingTransport, RevivingTransport

    return {
        "http_client": httpx.Client(transport=RevivingTransport(settings)),
        "http_async_client": httpx.AsyncClient(transport=AsyncRevivingTransport(settings)),
    }


def build_chat_model(role: Role, settings: ModelSettings) -> BaseChatModel:
    """Build the chat model of one role from its settings.

    Raises:
        ModelUnavailableError: When the role's endpoint cannot be resolved.
    """
    role_settings = settings.role(role)
    base_url = resolve_base_url(role, settings)
    log.debug("role %s -> %s at %s", role, role_settings.model, base_url)
    clients = local_http_clients(settings) if role_settings.is_local else {}
    return CompatibleChatOpenAI(
        model=role_settings.model,
        base_url=base_url,
        api_key=SecretStr(role_settings.api_key or "not-needed"),
        temperature=role_settings.temperature,
        max_completion_tokens=role_settings.max_tokens,  # ChatOpenAI's alias of its max_tokens field
        timeout=role_settings.timeout_s,
        # a streamed reply's first chunk waits for the whole prompt to be read: the role's timeout
        # governs it, not langchain-openai's own 120 s default (a long prompt on a slow CPU)
        stream_chunk_timeout=role_settings.timeout_s,
        max_retries=1,
        streaming=role == "writer",
        extra_body=(
            {"repeat_penalty": role_settings.sent_repeat_penalty}
            if role_settings.sent_repeat_penalty is not None
            else None
        ),
        **clients,
    )


def openai_chat(
    base_url: str,
    model: str,
    api_key: str = "not-needed",
    timeout_s: float = 120.0,
    max_tokens: int = 128,
    temperature: float = 0.0,
    response_format: dict[str, Any] | None = None,
) -> ChatFn:
    """A :data:`ChatFn` over an OpenAI-compatible ``/chat/completions`` endpoint (temperature 0 unless
    told: synthetic-query generation samples hot). ``response_format`` is sent as given (a JSON
    schema there makes llama.cpp constrain decoding to it)."""
    url = base_url.rstrip("/") + "/chat/completions"
    body: dict[str, Any] = {"model": model, "temperature": temperature, "max_tokens": max_tokens}
    if response_format is not None:
        body["response_format"] = response_format

    def chat(messages: list[dict[str, str]]) -> str:
        response = httpx.post(
            url,
            json={**body, "messages": messages},
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout_s,
        )
        response.raise_for_status()
        return response.json()["choices"][0]["message"]["content"] or ""

    return chat


def chat_from_environment() -> ChatFn:
    """The rerank model: ``$AISEARCH_RERANK_BASE_URL`` / ``_MODEL`` / ``_API_KEY`` if set, else the
    executor role of the aisearch settings (which may start the embedded local model server)."""
    rerank = load_group(RerankSettings, key="rerank")
    base_url, model = rerank.base_url, rerank.model
    api_key = rerank.api_key.get_secret_value() if rerank.api_key else "not-needed"
    if not base_url or not model:
        settings = load_model_settings()
        role = settings.role("executor")
        base_url = base_url or resolve_base_url("executor", settings)
        model = model or role.model
        api_key = role.api_key or api_key
    return openai_chat(base_url, model, api_key)
