"""``aisearch ask --interactive`` / ``--review-plan`` as a subprocess whose stdin is a terminal (a
pseudo-terminal the test types into), against the scripted endpoint; without a terminal nothing stops."""

from __future__ import annotations

import io
import json
import os
import pty
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from rich.console import Console

from app.human_cli import ask_person
from tests.conftest import REPO
from tests.support.fake_openai import fake_openai
from tests.support.human_script import EINSTEIN, RULES, SUM, VAGUE, WHO
from tests.support.processes import stop_process
from tests.test_cli import cli_env


@dataclass
class Terminal:
    """A CLI run with a pseudo-terminal on stdin; its stdout collected as it comes."""

    process: subprocess.Popen
    keyboard: int
    out: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.out)

    def wait_for(self, needle: str, after: int = 0, timeout_s: float = 90) -> int:
        """Wait until ``needle`` is printed (past offset ``after``); its end offset."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.text().find(needle, after)
            if found >= 0:
                return found + len(needle)
            assert self.process.poll() is None, f"the run ended before {needle!r}:\n{self.text()}"
            time.sleep(0.05)
        raise AssertionError(f"{needle!r} never came:\n{self.text()}")

    def type(self, line: str) -> None:
        os.write(self.keyboard, (line + "\n").encode())


@contextmanager
def terminal(*args: str, base_url: str, tmp_path) -> Iterator[Terminal]:
    """``aisearch ask …`` with a terminal on stdin (no echo), the Master's LLM deciding every route."""
    keyboard, tty = pty.openpty()
    attrs = termios.tcgetattr(tty)
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(tty, termios.TCSANOW, attrs)
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "ask", *args],
        env={**cli_env(base_url, tmp_path), "AISEARCH_ROUTING": "llm"},
        cwd=REPO,
        stdin=tty,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    os.close(tty)
    run = Terminal(process, keyboard)
    reader = threading.Thread(target=lambda: run.out.extend(iter(lambda: process.stdout.read(1), "")))
    reader.start()
    try:
        yield run
    finally:
        stop_process(process, timeout_s=20)
        reader.join(timeout=10)
        os.close(keyboard)


@pytest.mark.slow
def test_interactive_asks_the_masters_question_and_answers_the_clarified_one(tmp_path) -> None:
    with (
        fake_openai(RULES) as server,
        terminal("--interactive", VAGUE, base_url=server.url, tmp_path=tmp_path) as run,
    ):
        run.wait_for(f"question {WHO}")
        asked = run.wait_for("your answer")
        run.type("Albert Einstein")
        run.wait_for(EINSTEIN, after=asked)
        assert run.process.wait(timeout=60) == 0, run.text()
    assert any("When was he born? (Albert Einstein)" in prompt for prompt in server.prompts)


@pytest.mark.slow
def test_ctrl_c_at_the_question_ends_the_run_at_once(tmp_path) -> None:
    with (
        fake_openai(RULES) as server,
        terminal("--interactive", VAGUE, base_url=server.url, tmp_path=tmp_path) as run,
    ):
        run.wait_for("your answer")
        run.process.send_signal(signal.SIGINT)
        assert run.process.wait(timeout=15) == 130, "no wait for Enter: the prompt's thread is not joined"
        assert "Traceback" not in run.text(), run.text()


@pytest.mark.slow
def test_review_plan_shows_the_plan_asks_again_after_an_invalid_edit_and_runs_it_once_approved(
    tmp_path,
) -> None:
    with (
        fake_openai(RULES) as server,
        terminal("--review-plan", SUM, base_url=server.url, tmp_path=tmp_path) as run,
    ):
        shown = run.wait_for("t1: Compute 17 * 23 + 4")
        run.wait_for("pprove (Enter), edit, reject", after=shown)
        assert "▶ t1" not in run.text(), "nothing runs before the plan is approved"
        run.type("e")
        run.wait_for("@file.json")
        run.type('{"tasks": [{"id": "t1", "goal": "wipe", "tool": "shell.rm"}]}')
        error = run.wait_for("'shell.rm' is not among the")
        run.wait_for("pprove (Enter), edit, reject", after=error)
        run.type("a")
        run.wait_for("■ t1 ok", after=error)
        assert run.process.wait(timeout=60) == 0, run.text()
    assert "answer\n395" in run.text()


@pytest.mark.slow
def test_without_a_terminal_nothing_is_asked_and_the_run_answers(tmp_path) -> None:
    with fake_openai(RULES) as server:
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", "ask", "--interactive", "--review-plan", VAGUE],
            env={**cli_env(server.url, tmp_path), "AISEARCH_ROUTING": "llm"},
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=90,
        )
    assert done.returncode == 0, done.stderr
    assert "stdin is not a terminal: nothing is asked on this run" in done.stdout
    assert WHO not in done.stdout and "answer" in done.stdout
    assert not any('"clarify"' in prompt for prompt in server.prompts)


def scripted(*lines: str):
    """A reader that types ``lines`` one by one, then Ctrl-D."""
    typed = iter(lines)

    def read(prompt: str) -> str:
        try:
            return next(typed)
        except StopIteration:
            raise EOFError from None

    return read


def test_the_terminal_reply_forms(tmp_path) -> None:
    console = Console(file=io.StringIO(), width=200)
    task = {"id": "t1", "goal": "Compute", "tool": "python.calculate", "args": {}, "deps": [], "returns": ""}
    plan = {"tasks": [task], "version": 1}
    review = {"kind": "plan_review", "plan": plan, "waves": [["t1"]], "tools": ["python.calculate"]}
    edit = tmp_path / "plan.json"
    edit.write_text(json.dumps({"tasks": [{"id": "a", "goal": "g"}]}))

    assert ask_person(console, review, scripted("")) == "approve"
    assert ask_person(console, review, scripted("r", "too slow")) == {
        "action": "reject",
        "reason": "too slow",
    }
    assert ask_person(console, review, scripted("e", "{not json", "x", "e", f"@{edit}")) == {
        "action": "edit",
        "plan": {"tasks": [{"id": "a", "goal": "g"}]},
    }
    assert "not a JSON plan" in console.file.getvalue()
    assert ask_person(console, review, scripted()) == {
        "action": "reject",
        "reason": "no answer on the terminal",
    }
    question = {"kind": "clarification", "question": WHO, "error": "a clarification is answered with text"}
    assert ask_person(console, question, scripted("  Einstein ")) == "Einstein"
    assert ask_person(console, question, scripted()) == ""
    shown = console.file.getvalue()
    assert f"question {WHO}" in shown and "a clarification is answered with text" in shown
