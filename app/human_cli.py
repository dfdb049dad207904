"""``aisearch ask --interactive`` / ``--review-plan``: a paused run's request asked on the terminal.

The graph pauses with a request (``core/human.py``): the Master's clarifying question, or a plan to
review. :func:`ask_person` shows it and reads the person's reply from the terminal, in the form
the paused node reads (``Command(resume=reply)`` continues the run):

- a question: the answer as typed (empty: go on with the question as asked);
- a plan: ``a`` approve (also Enter), ``r`` reject (then an optional reason), ``e`` edit (then the
  replacement plan as one line of JSON, or ``@file.json``). An edit the graph finds invalid comes
  back as the same request with its errors, and is asked again.

End of input (Ctrl-D) answers a question with nothing and rejects a plan. Nothing is asked unless
stdin is a terminal (:func:`can_ask`): piped or scripted runs never stop.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from app.render import plan_tree
from core.events import PlanEvent

Read = Callable[[str], str]
PLAN_CHOICES = "[bold]a[/]pprove (Enter), [bold]e[/]dit, [bold]r[/]eject: "


def can_ask(stdin: TextIO) -> bool:
    """Whether a person can answer on ``stdin`` (a terminal)."""
    try:
        return stdin.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def ask_person(console: Console, request: dict[str, Any], read: Read | None = None) -> Any:
    """Show ``request`` (an interrupt payload) on ``console`` and return the person's reply.

    Args:
        console: Where the request is shown.
        request: The paused run's request (``kind``: ``clarification`` or ``plan_review``).
        read: Reads one line after a prompt (default: ``console.input``).
    """
    read = read or console.input
    if request.get("error"):
        console.print(f"[red]{escape(str(request['error']))}[/]")
    if request.get("kind") == "plan_review":
        return _review(console, request, read)
    console.print(f"[bold]question[/] {escape(str(request.get('question', '')))}")
    try:
        return read("your answer (Enter: go on as asked): ").strip()
    except EOFError:
        return ""


def terminal_reader(console: Console, fd: int | None = None) -> Read:
    """Read a line from the terminal on ``fd`` (default stdin's) after printing a prompt on ``console``.

    Reads the file descriptor itself, not ``sys.stdin``: a thread blocked in ``sys.stdin`` holds its
    buffer's lock, and the interpreter aborts at exit when Ctrl-C ends the run meanwhile.
    """
    fd = sys.stdin.fileno() if fd is None else fd

    def read(prompt: str) -> str:
        console.print(prompt, end="")
        console.file.flush()
        line = bytearray()
        while not line.endswith(b"\n"):
            chunk = os.read(fd, 1)
            if not chunk:
                if not line:
                    raise EOFError
                break
            line += chunk
        return line.decode("utf-8", errors="replace").rstrip("\r\n")

    return read


async def ask_in_thread(console: Console, request: dict[str, Any]) -> Any:
    """:func:`ask_person` on the terminal from a daemon thread, awaited.

    Ctrl-C cancels the run while the person is asked (asyncio's handler cancels the main task; a
    prompt on the loop's own thread would block until Enter), and the thread, still waiting for a
    line, neither holds the exit up nor a lock the interpreter needs at exit.
    """
    loop = asyncio.get_running_loop()
    answered: asyncio.Future[Any] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not answered.done():
            outcome()

    def work() -> None:
        try:
            reply = ask_person(console, request, terminal_reader(console))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            loop.call_soon_threadsafe(settle, partial(answered.set_exception, exc))
        else:
            loop.call_soon_threadsafe(settle, partial(answered.set_result, reply))

    threading.Thread(target=work, name="ask-person", daemon=True).start()
    return await answered


def _review(console: Console, request: dict[str, Any], read: Read) -> Any:
    plan = request["plan"]
    event = PlanEvent(
        event="plan",
        version=plan["version"],
        mode="plan",
        tasks=plan["tasks"],
        dropped=[],
        fallback=False,
        errors=[],
        waves=request.get("waves", []),
    )
    console.print("[bold]review the plan[/] before it runs")
    console.print(plan_tree(event))
    console.print(f"[dim]tools it may use: {', '.join(request.get('tools', [])) or '(none)'}[/]")
    while True:
        try:
            choice = read(PLAN_CHOICES).strip().lower()
            if choice in {"", "a", "approve"}:
                return "approve"
            if choice in {"r", "reject"}:
                return {"action": "reject", "reason": read("why (optional): ").strip()}
            if choice in {"e", "edit"}:
                edited = _read_plan(read('the plan as one line of JSON ({"tasks": [...]}) or @file.json: '))
                if edited is not None:
                    return {"action": "edit", "plan": edited}
                console.print('[red]not a JSON plan: {"tasks": [{"id": "t1", "goal": "...", ...}]}[/]')
        except EOFError:
            return {"action": "reject", "reason": "no answer on the terminal"}


def _read_plan(text: str) -> Any:
    """The plan typed (JSON) or named (``@path``); None when it is not JSON."""
    text = text.strip()
    try:
        if text.startswith("@"):
            text = Path(text[1:]).expanduser().read_text(encoding="utf-8")
        return json.loads(text)
    except (OSError, json.JSONDecodeError):
        return None
