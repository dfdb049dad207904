"""The sandbox runs ordinary code and refuses network, writes outside its directory, spawning and bombs."""

from __future__ import annotations

import ast
import os
import socket
import tempfile
from pathlib import Path

import pytest

from tests.support.sandbox_layers import PREFIX
from tools.servers.sandbox import run_sandboxed


def test_last_expression_value_and_stdout() -> None:
    result = run_sandboxed("x = 6\nprint('hello', x)\nx * 7")
    assert result.ok, result.error
    assert result.stdout == "hello 6\n"
    assert result.value == "42"
    assert result.error is None


def test_statement_only_code_has_no_value() -> None:
    result = run_sandboxed("total = sum(i * i for i in range(1, 101))\nprint(total)")
    assert result.ok
    assert result.stdout.strip() == "338350"
    assert result.value is None


def test_ordinary_error_is_short_and_specific() -> None:
    result = run_sandboxed("a = 1\nb = 0\na / b")
    assert not result.ok
    assert result.error == "ZeroDivisionError: division by zero (line 3)"
    assert "Traceback" not in result.error and "_main" not in result.error


def test_syntax_error() -> None:
    result = run_sandboxed("def f(:\n    pass")
    assert not result.ok
    assert result.error.startswith("SyntaxError:")
    assert "(line 1)" in result.error


def test_socket_connect_is_refused() -> None:
    with socket.socket() as server:  # a real listener, so only the sandbox can stop the connection
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        result = run_sandboxed(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)")
    assert not result.ok
    assert "network access is disabled in the sandbox" in result.error


def test_urllib_is_refused_even_when_wrapped() -> None:
    code = (
        "import urllib.request\n"
        "try:\n"
        "    urllib.request.urlopen('http://example.com', timeout=1)\n"
        "except Exception as exc:\n"
        "    raise RuntimeError('fetch failed') from exc\n"
    )
    result = run_sandboxed(code)
    assert not result.ok
    assert "network access is disabled in the sandbox" in result.error


@pytest.mark.slow
def test_infinite_loop_times_out() -> None:
    result = run_sandboxed("print('started', flush=True)\nwhile True:\n    pass", timeout_s=1.0)
    assert not result.ok
    assert result.error == "timed out after 1.0 s"
    assert result.stdout == "started\n"  # output produced before the kill is kept


def test_sleep_times_out() -> None:
    result = run_sandboxed("import time\ntime.sleep(60)", timeout_s=0.5)
    assert result.error == "timed out after 0.5 s"


@pytest.mark.parametrize(
    "code",
    ["x = bytearray(10**10)", "chunks = []\nwhile True:\n    chunks.append('x' * 10**6)"],
    ids=["bytearray", "growing-list"],
)
def test_memory_bombs_hit_the_limit(code: str) -> None:
    result = run_sandboxed(code, memory_mb=256)
    assert not result.ok
    assert result.error == "memory limit of 256 MB exceeded"


def test_write_outside_sandbox_is_refused() -> None:
    target = Path(tempfile.gettempdir()) / f"aisearch-sandbox-escape-{os.getpid()}.txt"
    result = run_sandboxed(f"open({str(target)!r}, 'w').write('escaped')")
    assert not result.ok
    assert "writing files outside the sandbox directory is not allowed" in result.error
    assert not target.exists()


def test_symlink_escape_is_refused() -> None:
    result = run_sandboxed("import os\nos.symlink('/etc/hostname', 'link')\nopen('link', 'a').write('x')")
    assert not result.ok
    assert "writing files outside the sandbox directory is not allowed" in result.error


def test_writes_inside_sandbox_work_and_directory_is_removed() -> None:
    code = "import os\nopen('notes.txt', 'w').write('hi')\nprint(open('notes.txt').read())\nos.getcwd()"
    result = run_sandboxed(code)
    assert result.ok, result.error
    assert result.stdout == "hi\n"
    workdir = ast.literal_eval(result.value)
    assert not os.path.exists(workdir)


@pytest.mark.parametrize(
    "code",
    [
        "import subprocess\nsubprocess.run(['echo', 'hi'])",
        "import os\nos.system('echo hi')",
        "import os\nos.fork()",
        "import os\nos.execv('/bin/echo', ['echo'])",
        "import _posixsubprocess\n_posixsubprocess.fork_exec()",
    ],
    ids=["subprocess", "os.system", "fork", "exec", "fork_exec"],
)
def test_spawning_processes_is_refused(code: str) -> None:
    result = run_sandboxed(code)
    assert not result.ok
    assert "starting processes is not allowed in the sandbox" in result.error


def test_signalling_the_parent_is_refused() -> None:
    result = run_sandboxed("import os, signal\nos.kill(os.getppid(), signal.SIGTERM)")
    assert not result.ok
    assert "signalling other processes is not allowed" in result.error


def test_output_is_truncated_with_a_note() -> None:
    result = run_sandboxed("print('x' * 20000)", max_output=8192)
    assert result.ok
    assert result.stdout.startswith("x" * 8192)
    assert "[output truncated: 11809 more bytes]" in result.stdout


def test_standard_library_and_unicode() -> None:
    code = "import datetime, statistics\nprint('中文 ✓')\n(datetime.date(2026, 11, 22) - datetime.date(1969, 7, 20)).days"
    result = run_sandboxed(code)
    assert result.ok, result.error
    assert result.stdout == "中文 ✓\n"
    assert result.value == "20944"


def test_the_audit_hook_is_a_tripwire_that_code_can_defeat() -> None:
    """Why the adversarial suites also run with the hook defeated: after the code's own defeat,
    what only the hook refused is allowed, and a fork reaches the seccomp filter."""
    code = "import gc, os\nprint(len(gc.get_objects()) > 0)\nos.fork()"
    held = run_sandboxed(code)
    defeated = run_sandboxed(PREFIX + code)
    assert held.error == "gc.get_objects is not allowed in the sandbox (line 2)"
    assert defeated.stdout == "True\n"
    assert defeated.error == "PermissionError: [Errno 1] Operation not permitted (line 4)"
