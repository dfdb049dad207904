"""``aisearch bench page``: time to the first answer token on the search page against the CLI's, on
the same question with the configured models (by default the shared local model server).

It starts ``aisearch serve`` on a free loopback port with its threads in a temporary database, then
takes turns, one run of each per round (the order reversed every other round, the page first):

- **cli**: ``aisearch ask QUESTION`` in a pseudo-terminal, from the command's start to its first
  answer token on screen (what a person at a terminal waits: the CLI starts its MCP servers each time);
- **page**: the page open in headless Chromium (Debian's ``/usr/bin/chromium`` through Playwright),
  a new conversation each run (as each ``aisearch ask`` is), from the Enter key to the first token in
  the short answer;
- **stream**: ``POST /stream`` from httpx, from the request to the first ``token`` event: the server
  alone, so the browser's share of the page's time shows.

Medians per side and the page's ratio to the CLI; a screenshot of the page after its first run.
"""

from __future__ import annotations

import os
import pty
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.browser import CHROMIUM, MISSING, launch_chromium
from bench.server import REPO, ServeError, serving

DEFAULT_QUESTION = "What is the name of Emperor Han-Wu?"
RUN_TIMEOUT_S = 600.0
SERVER_START_S = 180.0
POLL_S = 0.05  # the page's own clock times the token; polling only notices it
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ANSWER_HEADER = re.compile(r"(?m)^answer\r?\n\S")
"""The CLI's ``answer`` line followed by the first token (``app/render.py`` prints them together)."""
WATCH_FIRST_TOKEN = """() => {
  window.benchStart = null; window.benchFirst = null;
  document.getElementById("q").addEventListener("keydown", (event) => {
    if (event.key === "Enter") window.benchStart = performance.now();
  }, {capture: true});
  const short = document.getElementById("short-answer");
  new MutationObserver(() => {
    if (short.textContent.trim() && window.benchFirst === null) window.benchFirst = performance.now();
  }).observe(short, {childList: true, characterData: true, subtree: true});
}"""


class BenchError(RuntimeError):
    """A side of the benchmark could not run (no Chromium, a server that did not start, a run with no answer)."""


def cli_first_token(question: str, env: dict[str, str]) -> float:
    """Seconds from starting ``aisearch ask`` in a pseudo-terminal to its first answer token."""
    leader, follower = pty.openpty()
    start = time.perf_counter()
    command = [sys.executable, "-m", "app.cli", "ask", question]
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower
    )
    os.close(follower)
    screen, first = "", None
    try:
        while time.perf_counter() - start < RUN_TIMEOUT_S:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the command ended and closed the terminal
                break
            if not chunk:
                break
            screen += chunk.decode(errors="replace")
            if first is None and ANSWER_HEADER.search(ANSI.sub("", screen)):
                first = time.perf_counter() - start
        process.wait(timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    if first is None:
        raise BenchError(
            f"aisearch ask streamed no answer; its output ended with:\n{ANSI.sub('', screen)[-1500:]}"
        )
    return first


def stream_first_token(url: str, question: str) -> float:
    """Seconds from ``POST /stream`` to its first ``token`` event (then the stream is read to its end)."""
    start = time.perf_counter()
    first = None
    body = {"input": {"query": question}}
    with httpx.stream("POST", f"{url}/stream", json=body, timeout=RUN_TIMEOUT_S) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if first is None and line.startswith("data:") and '"event": "token"' in line:
                first = time.perf_counter() - start
    if first is None:
        raise BenchError("/stream sent no answer token")
    return first


def page_first_token(page: Any, url: str, question: str) -> float:
    """Seconds from the Enter key to the first token in the page's short answer (the page already open)."""
    from playwright.sync_api import Error, expect

    try:
        page.goto(url)
        # a conversation of its own, as each ``aisearch ask`` starts one
        page.evaluate("() => sessionStorage.clear()")
        page.reload()
        page.evaluate(WATCH_FIRST_TOKEN)
        page.fill("#q", question)
        page.press("#q", "Enter")
        deadline = time.monotonic() + RUN_TIMEOUT_S
        # polled from here: the page's CSP refuses the string evaluation wait_for_function needs
        while page.evaluate("window.benchFirst") is None:
            if time.monotonic() > deadline:
                raise BenchError(f"the page showed no answer token in {RUN_TIMEOUT_S:g} s")
            time.sleep(POLL_S)
        seconds = page.evaluate("(window.benchFirst - window.benchStart) / 1000")
        expect(page.locator("#stop")).to_be_hidden(timeout=RUN_TIMEOUT_S * 1000)  # the run ended
    except Error as exc:
        raise BenchError(f"the page failed: {exc.message.splitlines()[0]}") from None
    return float(seconds)


def run(
    question: str,
    rounds: int,
    screenshot: Path | None,
    *,
    stream: bool = True,
    on_run: Callable[[str, float], None] | None = None,
) -> dict[str, Any]:
    """``rounds`` runs of each side, taking turns; the report with medians and the page's ratio.

    Args:
        question: The question every run asks.
        rounds: Runs of each side.
        screenshot: Where to save a PNG of the page after its first run (None: no screenshot).
        stream: Time the server's own stream too.
        on_run: Called with the side and its seconds after each run (progress).
    """
    if not CHROMIUM.exists():
        raise BenchError(MISSING)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise BenchError("the page side needs Playwright: pip install 'aisearch[test]'") from None
    times: dict[str, list[float]] = {"cli": [], "page": [], "stream": []}
    with tempfile.TemporaryDirectory(prefix="aisearch-bench-page-") as root:
        env = {
            **os.environ,
            "AISEARCH_DB": f"{root}/threads.sqlite",
            "TERM": "xterm-256color",
            "COLUMNS": "120",
            # every run must reach the team: a cached answer would time the cache, not the page
            "AISEARCH_CACHE_ANSWERS": "false",
            "AISEARCH_CACHE_TOOLS": "false",
        }
        env.pop("AISEARCH_HTTP_TOKEN", None)
        try:
            with (
                serving(env, Path(root) / "serve.log", timeout_s=SERVER_START_S) as url,
                sync_playwright() as playwright,
            ):
                browser = launch_chromium(
                    playwright, f"{root}/chromium-profile", viewport={"width": 1000, "height": 720}
                )
                page = browser.new_page()
                try:
                    sides: dict[str, Callable[[], float]] = {
                        "cli": lambda: cli_first_token(question, env),
                        "page": lambda: page_first_token(page, url, question),
                    }
                    if stream:
                        sides["stream"] = lambda: stream_first_token(url, question)
                    for number in range(rounds):
                        order = list(sides.items())
                        # the page first, then the CLI first, in turn
                        for side, measure in order if number % 2 else reversed(order):
                            times[side].append(measure())
                            if on_run is not None:
                                on_run(side, times[side][-1])
                            if side == "page" and screenshot is not None and len(times["page"]) == 1:
                                page.screenshot(path=str(screenshot))
                finally:
                    browser.close()
        except ServeError as exc:
            raise BenchError(str(exc)) from None
    times = {side: values for side, values in times.items() if values}
    medians = {side: round(statistics.median(values), 2) for side, values in times.items()}
    return {
        "date": datetime.now(UTC).date().isoformat(),
        "question": question,
        "rounds": rounds,
        "seconds": {side: [round(value, 2) for value in values] for side, values in times.items()},
        "median_s": medians,
        "page_over_cli": round(medians["page"] / medians["cli"], 2),
        "page_over_stream": round(medians["page"] / medians["stream"], 2) if "stream" in medians else None,
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table."""
    lines = [
        f"# Time to the first answer token: page vs CLI ({report['date']})",
        "",
        f"Question: {report['question']!r}, {report['rounds']} rounds ({', '.join(report['seconds'])} in turn).",
        "",
        "| side | median s | runs s |",
        "|---|---|---|",
    ]
    for side in report["seconds"]:
        runs = ", ".join(f"{value:g}" for value in report["seconds"][side])
        lines.append(f"| {side} | {report['median_s'][side]:g} | {runs} |")
    lines += [
        "",
        f"Page / CLI: {report['page_over_cli']:g}×."
        + (f" Page / server stream: {report['page_over_stream']:g}×." if report["page_over_stream"] else ""),
    ]
    return "\n".join(lines) + "\n"
