"""Clients of the local model server open a fresh connection per request.

llama-server's router closes the connection after each reply it forwards while announcing
keep-alive; a pooled connection reused in the instant before that close arrives failed a request
with "server disconnected without sending a response". The stand-in server here keeps connections
alive properly, so a client that pools would reuse one: each request's client port tells.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from core.settings import load_settings
from models.factory import local_http_clients
from models.server_revival import AsyncRevivingTransport, RevivingTransport


class KeepAliveHandler(BaseHTTPRequestHandler):
    """Answers every POST with a small JSON body over HTTP/1.1 keep-alive; records client ports."""

    protocol_version = "HTTP/1.1"
    ports: list[int] = []

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.ports.append(self.client_address[1])
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def server() -> Iterator[tuple[str, list[int]]]:
    """A keep-alive HTTP server on a free loopback port: its URL and the client ports it saw."""
    ports: list[int] = []
    handler = type("Handler", (KeepAliveHandler,), {"ports": ports})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1/chat/completions", ports
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_pooling_client_reuses_one_connection_here(server: tuple[str, list[int]]) -> None:
    url, ports = server
    with httpx.Client() as client:
        for _ in range(3):
            client.post(url, json={}).raise_for_status()
    assert len(set(ports)) == 1, "the stand-in keeps connections alive, so the check below means something"


def test_the_sync_transport_opens_a_connection_per_request(server: tuple[str, list[int]]) -> None:
    url, ports = server
    with httpx.Client(transport=RevivingTransport(load_settings(env={}))) as client:
        for _ in range(3):
            client.post(url, json={}).raise_for_status()
    assert len(ports) == 3 and len(set(ports)) == 3


def test_the_async_transport_opens_a_connection_per_request(server: tuple[str, list[int]]) -> None:
    url, ports = server

    async def three() -> None:
        async with httpx.AsyncClient(transport=AsyncRevivingTransport(load_settings(env={}))) as client:
            for _ in range(3):
                (await client.post(url, json={})).raise_for_status()

    asyncio.run(three())
    assert len(ports) == 3 and len(set(ports)) == 3


def test_the_roles_clients_are_these_transports() -> None:
    clients = local_http_clients(load_settings(env={}))
    assert isinstance(clients["http_client"]._transport, RevivingTransport)
    assert isinstance(clients["http_async_client"]._transport, AsyncRevivingTransport)
