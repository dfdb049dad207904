"""A scripted OpenAI-compatible HTTP endpoint for CLI and server tests (no model, no network).

It serves ``GET /v1/models`` and ``POST /v1/chat/completions`` (plain and streamed as SSE) on
loopback, answering each request by the first rule whose text occurs in the prompt (a tuple of
texts: all of them occur). A rule whose reply is an ``int`` answers with that HTTP status (a
failing endpoint).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence access logs
        return

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        else:
            self._send_json(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.server.bodies.append(body)
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        limit = self.server.max_prompt_chars
        if limit is not None and len(prompt) > limit:  # llama-cpp-python's words for a context overflow
            message = f"Requested tokens ({len(prompt)}) exceed context window of {limit}"
            self._send_json(400, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        reply = self.server.reply_for(prompt)
        if self.server.delay_s:  # a slow endpoint: the reply comes after the delay
            time.sleep(self.server.delay_s)
        if reply is None:
            self._send_json(400, {"error": {"message": f"no scripted reply for: {prompt[:300]}"}})
            return
        if isinstance(reply, int):
            self._send_json(
                reply, {"error": {"message": f"scripted failure {reply}", "type": "server_error"}}
            )
            return
        created = int(time.time())
        if not body.get("stream"):
            self._send_json(
                200,
                {
                    "id": "fake-1",
                    "object": "chat.completion",
                    "created": created,
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": reply},
                        }
                    ],
                    "usage": {
                        "prompt_tokens": len(prompt.split()),
                        "completion_tokens": len(reply.split()),
                        "total_tokens": 0,
                    },
                },
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        words = reply.split(" ")
        for index, word in enumerate(words):
            piece = word if index == len(words) - 1 else word + " "
            chunk = {
                "id": "fake-1",
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.get("model"),
                "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        done = {
            "id": "fake-1",
            "object": "chat.completion.chunk",
            "created": created,
            "model": body.get("model"),
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
        self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    url: str  # the base URL, set once the port is known

    def __init__(
        self,
        rules: list[tuple[str | tuple[str, ...], Any]],
        max_prompt_chars: int | None = None,
        delay_s: float = 0.0,
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.rules = rules
        self.max_prompt_chars = max_prompt_chars
        self.delay_s = delay_s
        self.prompts: list[str] = []
        self.bodies: list[dict[str, Any]] = []

    def reply_for(self, prompt: str) -> str | int | None:
        self.prompts.append(prompt)
        for needle, reply in self.rules:
            if all(text in prompt for text in ((needle,) if isinstance(needle, str) else needle)):
                return reply if isinstance(reply, str | int) else json.dumps(reply)
        return None


@contextmanager
def fake_openai(
    rules: list[tuple[str | tuple[str, ...], Any]], max_prompt_chars: int | None = None, delay_s: float = 0.0
) -> Iterator[_Server]:
    """Serve the scripted endpoint on a free loopback port; ``server.url`` is the base URL.

    A prompt longer than ``max_prompt_chars`` is rejected with HTTP 400 as past the context window;
    every reply waits ``delay_s`` seconds first (a slow endpoint).
    """
    server = _Server(rules, max_prompt_chars, delay_s)
    server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
