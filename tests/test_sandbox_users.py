"""The sandbox when the server runs as another user, wherever the checkout sits.

A test that starts a process as another user must not depend on where the user cloned: a
checkout in a private directory (``mktemp -d``, ``/root``) is unreadable to ``nobody``, so the
server runs from a copy of the sandbox's modules that ``nobody`` can read.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sandbox_layers import needs_namespaces, without_cgroup

REPO_ROOT = Path(__file__).resolve().parents[1]


def _nobody_can_read(path: Path) -> bool:
    """Whether ``nobody`` (in no group of the owner) can reach and read ``path``."""
    path = path.resolve()
    dirs_ok = all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)
    return dirs_ok and bool(path.stat().st_mode & stat.S_IROTH)


@pytest.fixture
def sandbox_copy_for_nobody() -> Iterator[Path]:
    """The sandbox's modules in a directory of their own that ``nobody`` can read.

    The checkout may sit in a private directory (``mktemp -d``, ``/root``): the server then runs
    the same files from a copy instead of the checkout.
    """
    for base in (None, "/tmp", "/dev/shm"):
        try:
            root = Path(tempfile.mkdtemp(prefix="aisearch-nobody-", dir=base))
        except OSError:
            continue
        if _nobody_can_read(root.parent):
            break
        shutil.rmtree(root)
    else:
        pytest.skip("no temporary directory that nobody can reach (TMPDIR, /tmp and /dev/shm are private)")
    package = root / "tools" / "servers"
    package.mkdir(parents=True)
    for init in (root / "tools" / "__init__.py", package / "__init__.py"):
        init.touch()
    for module in (REPO_ROOT / "tools" / "servers").glob("sandbox*.py"):
        shutil.copy(module, package / module.name)
    for path in (root, *root.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield root
    shutil.rmtree(root)


@needs_namespaces
@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("setpriv"), reason="needs root to become nobody")
def test_an_unprivileged_server_gets_the_same_boundary_through_a_user_namespace(
    sandbox_copy_for_nobody: Path,
) -> None:
    """The server runs as ``nobody``: namespaces come from a user namespace, capabilities are dropped."""
    interpreter = next(
        (Path(p) for p in (sys.executable, "/usr/bin/python3") if _nobody_can_read(Path(p))), None
    )  # the project's interpreter may sit in a directory nobody cannot read (/root/.pyenv)
    if interpreter is None:
        pytest.skip(f"nobody can read neither {sys.executable} nor /usr/bin/python3")
    code = (
        "import os\n"
        f"print(sorted(os.listdir('/proc'))[:2], os.path.exists({str(REPO_ROOT / 'README.md')!r}))\n"
        "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
        "os.fork()"
    )
    helper = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(sandbox_copy_for_nobody)!r})\n"
        "from tools.servers.sandbox import run_sandboxed\n"
        f"print(json.dumps(run_sandboxed({code!r}, audit_hook=False).__dict__))"
    )
    out = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(interpreter), "-I", "-c", helper],
        capture_output=True, text=True, timeout=30, cwd="/",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["stdout"] == "['1', '2'] False\n0000000000000000\n", result
    assert "Operation not permitted" in result["error"]
    # nobody may not make a memory cgroup (none is delegated to it): said, and nothing else is missing
    assert without_cgroup(tuple(result["missing"])) == ()
