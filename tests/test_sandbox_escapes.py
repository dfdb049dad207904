"""Adversarial sandbox suite: each escape fails at the operating-system layer.

Every test runs real sandboxed processes. Most turn the audit hook off (and some the seccomp
filter) to show that the layer under it holds alone: what the code cannot do must be impossible,
not just refused by the interpreter. Each runs twice, with the hook never installed and with it
installed and defeated by the code first (``tests/support/sandbox_layers.py``). Processes the code starts rename themselves (``prctl``
``PR_SET_NAME``) to a unique marker, so the tests can check through ``/proc`` that none outlives
its run. Bombs are bounded: a few processes, 256 MB, timeouts of 1-3 s.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.sandbox_layers import hook_layer, needs_namespaces, without_cgroup  # noqa: F401
from tools.servers import sandbox
from tools.servers.sandbox import run_sandboxed
from tools.servers.sandbox_hook import SPAWN_MSG

REPO_ROOT = Path(__file__).resolve().parents[1]
OS_ONLY = {"audit_hook": False}
NO_FILTERS = {"audit_hook": False, "seccomp": False}
NAME_SELF = "import ctypes\nctypes.CDLL(None).prctl(15, {marker!r}.encode(), 0, 0, 0)\n"


def _marker() -> str:
    return "sbx" + uuid.uuid4().hex[:10]  # a comm name holds 15 characters


def _alive(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/comm").read_text().strip() == marker:
                stat = Path(f"/proc/{entry}/stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def _gone(marker: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while _alive(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def secret_process():
    """A process of the host whose environment holds a secret, as the server's would."""
    proc = subprocess.Popen(["sleep", "30"], env={"AISEARCH_TEST_API_KEY": "secret-6f1d"})
    yield proc
    proc.kill()
    proc.wait()


@needs_namespaces
def test_the_parent_environment_and_other_processes_are_invisible(secret_process, monkeypatch) -> None:
    monkeypatch.setenv("AISEARCH_OPENAI_API_KEY", "secret-in-the-server")
    code = (
        "import os\n"
        f"for pid in ['self', str(os.getppid()), {str(os.getpid())!r}, {str(secret_process.pid)!r}]"
        " + os.listdir('/proc'):\n"
        "    try:\n"
        "        print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except OSError:\n"
        "        pass\n"
        "print(sorted(os.environ))\n"
        "sorted(p for p in os.listdir('/proc') if p.isdigit())"
    )
    result = run_sandboxed(code, **OS_ONLY)
    assert result.ok, result.error
    assert "secret" not in result.stdout
    assert "AISEARCH" not in result.stdout
    assert result.value == "['1', '2']"  # the init and the code: nothing of the host


@needs_namespaces
def test_files_outside_the_work_directory_are_hidden(tmp_path: Path) -> None:
    outside = tmp_path / "notes.txt"
    outside.write_text("secret-outside")
    outside.chmod(0o644)
    code = (
        f"for path in [{str(outside)!r}, {str(REPO_ROOT / 'README.md')!r}, '/root/.bash_history']:\n"
        "    try:\n"
        "        print(open(path).read())\n"
        "    except OSError as exc:\n"
        "        print(type(exc).__name__)\n"
        f"import os\nsorted(os.listdir({str(REPO_ROOT)!r})) if os.path.isdir({str(REPO_ROOT)!r}) else []"
    )
    result = run_sandboxed(code, **OS_ONLY)
    assert result.ok, result.error
    assert "secret-outside" not in result.stdout and "aisearch" not in result.stdout
    assert result.value in ("[]", "['.venv']")  # at most the interpreter's own directory, bound back


def test_python_and_the_standard_library_still_work_inside() -> None:
    result = run_sandboxed(
        "import json, decimal, sqlite3, datetime\njson.dumps({'a': decimal.Decimal(1).sqrt().__str__()})"
    )
    assert result.ok, result.error
    assert result.value == '\'{"a": "1"}\''


def test_the_frame_trick_no_longer_disables_the_audit_hook() -> None:
    code = (
        "import sys\n"
        "frame = sys._getframe(1)\n"
        "while frame is not None:\n"
        "    for value in list(frame.f_locals.values()):\n"
        "        if isinstance(value, (set, dict)) and value is not globals():\n"
        "            value.clear()\n"
        "    frame = frame.f_back\n"
        "import os\n"
        "if os.fork() == 0:\n"
        "    os._exit(0)\n"
        "'FORKED'"
    )
    result = run_sandboxed(code, seccomp=False)  # the hook alone
    assert not result.ok
    assert SPAWN_MSG in result.error
    assert result.value is None


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos.fork()",
        "import ctypes\nctypes.CDLL(None, use_errno=True).fork()\nraise OSError(ctypes.get_errno(), 'fork')",
        "import os\nos.execv('/bin/echo', ['echo', 'EXECED'])",
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.execv(b'/bin/echo', (ctypes.c_char_p * 3)(b'echo', b'EXECED', None))\n"
        "raise OSError(ctypes.get_errno(), 'execv')",
        "import subprocess\nsubprocess.run(['echo', 'EXECED'])",
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.unshare(0x10000000 | 0x00020000) != 0:\n"  # a user and mount namespace: capabilities again
        "    raise OSError(ctypes.get_errno(), 'unshare')",
    ],
    ids=["os.fork", "ctypes-fork", "os.execv", "ctypes-execv", "subprocess", "unshare"],
)
def test_fork_and_exec_fail_without_the_audit_hook(code: str) -> None:
    result = run_sandboxed(code, **OS_ONLY)
    assert not result.ok
    assert "[Errno 1]" in result.error, result.error  # EPERM from the seccomp filter
    assert "EXECED" not in result.stdout


def test_a_fork_bomb_stops_at_the_process_limit() -> None:
    marker = _marker()
    code = NAME_SELF.format(marker=marker) + (
        "import os, time\n"
        "forks = 0\n"
        "try:\n"
        "    for _ in range(50):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        forks += 1\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
        "forks"
    )
    result = run_sandboxed(code, timeout_s=3.0, nproc=6, **NO_FILTERS)
    assert result.ok, result.error
    assert "refused 11" in result.stdout  # EAGAIN from RLIMIT_NPROC
    assert int(result.value) < 6
    assert _gone(marker)


@needs_namespaces
def test_a_setsid_escape_dies_with_the_run() -> None:
    marker = _marker()
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        + "".join("        " + line + "\n" for line in NAME_SELF.format(marker=marker).splitlines())
        + "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "time.sleep(0.5)\n"
        "'parent done'"
    )
    result = run_sandboxed(code, timeout_s=3.0, **NO_FILTERS)
    assert result.ok, result.error
    assert _gone(marker)


@pytest.mark.parametrize(
    "namespaces", [pytest.param(True, marks=needs_namespaces), False], ids=["ns", "no-ns"]
)
@pytest.mark.slow
def test_children_are_killed_on_timeout(namespaces: bool) -> None:
    marker = _marker()
    code = (
        NAME_SELF.format(marker=marker)
        + "import os, time\nos.setsid() if os.fork() == 0 else None\ntime.sleep(60)"
    )
    result = run_sandboxed(code, timeout_s=1.0, namespaces=namespaces, **NO_FILTERS)
    assert result.error == "timed out after 1.0 s"
    assert _gone(marker)


@pytest.mark.parametrize(
    "namespaces", [pytest.param(True, marks=needs_namespaces), False], ids=["ns", "no-ns"]
)
def test_everything_dies_when_the_server_is_killed(namespaces: bool, tmp_path: Path) -> None:
    """A SIGKILLed server cannot remove its work directory: the test keeps it under ``tmp_path``
    (through ``TMPDIR``) rather than leaving one in the machine's temporary folder per run."""
    marker = _marker()
    code = (
        NAME_SELF.format(marker=marker)
        + "import os, time\nos.setsid() if os.fork() == 0 else None\ntime.sleep(60)"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", f"from tools.servers.sandbox import run_sandboxed\n"
         f"run_sandboxed({code!r}, timeout_s=30, namespaces={namespaces}, audit_hook=False, seccomp=False)"],
        cwd=REPO_ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while len(_alive(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_alive(marker)) == 2
        assert [p.name[: len("aisearch-sandbox-")] for p in tmp_path.iterdir()] == ["aisearch-sandbox-"]
        server.send_signal(signal.SIGKILL)
        server.wait()
        assert _gone(marker)
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize(
    "code",
    ["x = bytearray(10**10)", "chunks = []\nwhile True:\n    chunks.append('x' * 10**6)"],
    ids=["bytearray", "growing-list"],
)
def test_memory_bombs_hit_the_limit_without_the_hook(code: str) -> None:
    result = run_sandboxed(code, memory_mb=256, **OS_ONLY)
    assert result.error == "memory limit of 256 MB exceeded"


def test_limits_cannot_be_raised_and_no_privilege_is_left() -> None:
    code = (
        "import resource\n"
        "status = open('/proc/self/status').read()\n"
        "print(status.split('CapEff:')[1].split()[0], status.split('NoNewPrivs:')[1].split()[0])\n"
        "resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))"
    )
    result = run_sandboxed(code, **OS_ONLY)
    assert result.stdout == "0000000000000000 1\n"
    assert not result.ok and result.error.startswith("ValueError: not allowed to raise maximum limit")


@needs_namespaces
def test_the_network_is_unreachable_without_the_hook_and_the_filter() -> None:
    with socket.socket() as server:  # a real listener on the host's loopback
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.3)
        port = server.getsockname()[1]
        result = run_sandboxed(
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)", **NO_FILTERS
        )
        with pytest.raises(TimeoutError):
            server.accept()
    assert not result.ok
    assert "Network is unreachable" in result.error


@needs_namespaces
def test_writes_outside_the_work_directory_fail_without_the_hook(tmp_path: Path) -> None:
    tmp_path.chmod(0o777)  # even a world-writable directory of the host
    result = run_sandboxed(f"open({str(tmp_path / 'escaped.txt')!r}, 'w').write('x')", **OS_ONLY)
    assert not result.ok
    assert not (tmp_path / "escaped.txt").exists()


def test_without_namespaces_a_loud_warning_names_what_is_missing(monkeypatch, caplog) -> None:
    """The forced degradation (AISEARCH_SANDBOX_NAMESPACES=0): warned once; the other layers hold."""
    monkeypatch.setenv(sandbox.NAMESPACES_ENV, "0")
    monkeypatch.setattr(sandbox, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="tools.servers.sandbox"):
        first = run_sandboxed("import os\nos.fork()", **OS_ONLY)
        second = run_sandboxed("import os\nsorted(os.environ)", **OS_ONLY)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    warnings = [w for w in warnings if "no memory cgroup" not in w]  # a kernel without one says so too
    assert len(warnings) == 1
    assert "WEAKER" in warnings[0] and "AISEARCH_SANDBOX_NAMESPACES=0" in warnings[0]
    assert (
        without_cgroup(first.missing)
        == without_cgroup(second.missing)
        == ("Linux namespaces are turned off (AISEARCH_SANDBOX_NAMESPACES=0)",)
    )
    assert "Operation not permitted" in first.error  # seccomp holds without namespaces
    assert "AISEARCH" not in second.value  # so does the clean environment


def test_without_namespaces_a_setsid_escape_is_still_reaped() -> None:
    marker = _marker()
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        + "".join("        " + line + "\n" for line in NAME_SELF.format(marker=marker).splitlines())
        + "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "time.sleep(0.5)"
    )
    result = run_sandboxed(code, timeout_s=3.0, namespaces=False, **NO_FILTERS)
    assert result.ok, result.error
    assert _gone(marker)


@pytest.mark.skipif(
    os.getuid() != 0, reason="as root the code runs as nobody, who cannot read root's processes"
)
def test_without_namespaces_root_code_runs_as_nobody(secret_process) -> None:
    code = f"import os\nprint(os.getuid())\nopen('/proc/{secret_process.pid}/environ', 'rb').read()"
    result = run_sandboxed(code, namespaces=False, **OS_ONLY)
    assert result.stdout == "65534\n"
    assert result.error.startswith("PermissionError")
