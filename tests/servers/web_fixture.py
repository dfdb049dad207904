"""A loopback web fixture: SearxNG's JSON API over saved HTML pages, and the pages themselves.

Routes (``BASE`` is ``http://127.0.0.1:PORT``):

* ``GET /search?q=…&format=json``: SearxNG's JSON reply (``results`` with ``url``, ``title``,
  ``content``, ``publishedDate``, ``engine``), pages ranked by the query words they contain;
  ``format`` other than ``json`` is refused with 403, as a SearxNG without the format enabled does;
* ``GET /broken/search``: HTTP 500; ``GET /slow/search``: answers after ``SLOW_S`` seconds;
* ``GET /pages/NAME.html``: a page of ``tests/fixtures/web``;
* ``GET /redirect?to=URL``: a 302 to ``URL``; ``GET /file.pdf``: a PDF; ``GET /huge``: 5 MB of HTML;
* ``POST /tavily`` and ``GET /brave``: the keyed APIs' shapes (401 without the key ``test-key``).

Run alone for a manual or measured run: ``python -m tests.servers.web_fixture --port 8888``.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

PAGES = Path(__file__).resolve().parent.parent / "fixtures" / "web"
SLOW_S = 3.0
KEY = "test-key"
TAG = re.compile(r"<[^>]+>")
META = r'<meta (?:name|property)="{}" content="([^"]*)"'


def page_facts(path: Path) -> dict[str, str]:
    """A saved page's title, description, date and visible words (for the fake search engine)."""
    html = path.read_text(encoding="utf-8")
    title = re.search(r"<title>(.*?)</title>", html, re.S)
    description = re.search(META.format("description"), html)
    published = re.search(META.format("article:published_time"), html)
    return {
        "title": unescape(title.group(1).strip()) if title else path.stem,
        "content": unescape(description.group(1)) if description else "",
        "publishedDate": published.group(1) if published else "",
        "text": unescape(TAG.sub(" ", html)).lower(),
    }


class Handler(BaseHTTPRequestHandler):
    """Answers the routes above."""

    server_version = "web-fixture/1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        return

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (the timeout tests)

    def _json(self, data: object, status: int = 200) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def _base(self) -> str:
        return f"http://{self.headers.get('Host')}"

    def _hits(self, query: str, k: int = 10) -> list[dict[str, str]]:
        words = {word for word in re.findall(r"\w+", query.lower()) if len(word) > 2}
        scored = []
        for path in sorted(PAGES.glob("*.html")):
            facts = page_facts(path)
            score = sum(1 for word in words if word in facts["text"])
            if score:
                scored.append((score, path, facts))
        scored.sort(key=lambda item: -item[0])
        return [
            {
                "url": f"{self._base()}/pages/{path.name}",
                "title": facts["title"],
                "content": facts["content"],
                "publishedDate": facts["publishedDate"] or None,
                "engine": "fixture",
            }
            for _, path, facts in scored[:k]
        ]

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        parts = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if parts.path == "/search":
            if query.get("format") != "json":
                self._send(403, b"Forbidden", "text/html")
                return
            self._json({"query": query.get("q", ""), "results": self._hits(query.get("q", "")),
                        "unresponsive_engines": []})  # fmt: skip
        elif parts.path == "/broken/search":
            self._send(500, b"Internal Server Error", "text/html")
        elif parts.path == "/slow/search":
            time.sleep(SLOW_S)
            self._json({"results": []})
        elif parts.path.startswith("/pages/") and (PAGES / parts.path[7:]).is_file():
            self._send(200, (PAGES / parts.path[7:]).read_bytes(), "text/html; charset=utf-8")
        elif parts.path == "/redirect":
            self._send(302, b"", "text/html", {"Location": query.get("to", "/")})
        elif parts.path == "/file.pdf":
            self._send(200, b"%PDF-1.4 not a web page", "application/pdf")
        elif parts.path == "/huge":
            paragraph = "<p>" + "Filler words about nothing in particular. " * 40 + "</p>\n"
            self._send(200, ("<html><body><article>" + paragraph * 2500).encode(), "text/html")
        elif parts.path == "/brave":
            if self.headers.get("X-Subscription-Token") != KEY:
                self._json({"error": "unauthorized"}, 401)
                return
            hits = self._hits(query.get("q", ""), int(query.get("count", "10")))
            self._json({"web": {"results": [
                {"url": h["url"], "title": h["title"], "description": h["content"], "page_age": h["publishedDate"]}
                for h in hits
            ]}})  # fmt: skip
        else:
            self._send(404, b"Not Found", "text/html")

    def do_POST(self) -> None:  # noqa: N802 - the base class's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if urlsplit(self.path).path != "/tavily":
            self._send(404, b"Not Found", "text/html")
        elif self.headers.get("Authorization") != f"Bearer {KEY}":
            self._json({"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401)
        else:
            hits = self._hits(body.get("query", ""), int(body.get("max_results", 5)))
            self._json({"query": body.get("query"), "results": [
                {"url": h["url"], "title": h["title"], "content": h["content"], "score": 0.9,
                 "published_date": h["publishedDate"]}
                for h in hits
            ]})  # fmt: skip


@contextmanager
def running(host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve the fixture in a thread; yields its base URL."""
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="web-fixture", daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    """Serve the fixture in the foreground."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"web fixture on http://{args.host}:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
