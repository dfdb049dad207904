"""The HTTP app's own token and its ``Host`` check, on the app without its lifespan (no run opens).

A request that passes the guards reaches a route that answers 503 (the server is starting), so
what the guards decide shows in the status alone.
"""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from app.http_api import create_app
from app.http_guard import GuardOptions
from app.serve_cli import served_hosts

STARTING = 503


def client(env: dict[str, str], host: str = "127.0.0.1:8321") -> TestClient:
    """A client of the app guarded as ``env`` says, sending ``Host: host``."""
    return TestClient(create_app(guard=GuardOptions.from_env(env)), base_url=f"http://{host}")


def test_the_api_token_is_its_own_variable_not_the_model_key() -> None:
    model_key_only = client({"AISEARCH_API_KEY": "sk-provider"})
    assert model_key_only.get("/input_schema").status_code == 200, "a model key does not turn auth on"
    assert (
        model_key_only.get("/input_schema", headers={"Authorization": "Bearer sk-provider"}).status_code
        == 200
    )
    guarded = client({"AISEARCH_HTTP_TOKEN": "api-token", "AISEARCH_API_KEY": "sk-provider"})
    assert guarded.get("/input_schema").status_code == 401
    assert guarded.get("/input_schema", headers={"Authorization": "Bearer sk-provider"}).status_code == 401
    assert guarded.get("/input_schema", headers={"Authorization": "Bearer api-token"}).status_code == 200
    assert guarded.get("/health").status_code == STARTING, "/health needs no token"


def test_a_token_equal_to_a_model_key_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="app.http_guard"):
        GuardOptions.from_env({"AISEARCH_HTTP_TOKEN": "same", "AISEARCH_WRITER_API_KEY": "same"})
    assert "AISEARCH_HTTP_TOKEN equals AISEARCH_WRITER_API_KEY" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="app.http_guard"):
        GuardOptions.from_env({"AISEARCH_HTTP_TOKEN": "token", "AISEARCH_API_KEY": "key"})
    assert caplog.text == ""


@pytest.mark.parametrize("host", ["127.0.0.1:8321", "localhost:8321", "[::1]:8321", "LOCALHOST"])
def test_loopback_names_are_served_by_default(host: str) -> None:
    assert client({}, host).get("/input_schema").status_code == 200


@pytest.mark.parametrize("host", ["attacker.example:8321", "127.0.0.1.nip.io", "evil", ""])
def test_a_rebinding_host_is_refused_on_every_route(host: str) -> None:
    """A page whose name resolves to 127.0.0.1 sends its own name as Host: 421, token or not."""
    app = client({}, host)
    for path in ("/input_schema", "/health", "/conversations/t/state"):
        response = app.get(path)
        assert response.status_code == 421, (path, response.text)
    assert app.post("/invoke", json={"input": {"query": "x"}}).status_code == 421


def test_configured_names_are_served_and_star_turns_the_check_off() -> None:
    named = {"AISEARCH_HTTP_HOSTS": "search.example.org, 10.0.0.5"}
    assert client(named, "search.example.org").get("/input_schema").status_code == 200
    assert client(named, "10.0.0.5:8321").get("/input_schema").status_code == 200
    assert client(named, "localhost").get("/input_schema").status_code == 421, "the list replaces the default"
    assert client({"AISEARCH_HTTP_HOSTS": "*"}, "anything").get("/input_schema").status_code == 200


def test_serve_adds_the_bound_address_to_the_configured_names() -> None:
    assert served_hosts("127.0.0.1", "") == "localhost,127.0.0.1,::1"
    assert served_hosts("10.0.0.5", "search.example.org") == "search.example.org,10.0.0.5"
    assert served_hosts("0.0.0.0", "search.example.org") == "search.example.org"
    assert served_hosts("0.0.0.0", "") == "*", (
        "a wildcard bind with no names cannot be checked (a warning says so)"
    )
    assert served_hosts("10.0.0.5", "*") == "*"
