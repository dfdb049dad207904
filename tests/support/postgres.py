"""A throwaway Postgres server for tests: ``initdb`` in a temporary folder, loopback only, trust auth.

Uses the server binaries of Debian's ``postgresql`` package (``/usr/lib/postgresql/*/bin``) or
any on ``PATH``. Postgres refuses to run as root: as root the cluster belongs to the ``postgres``
user and its commands run through ``runuser``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from models.server_process import free_port


def postgres_bin() -> Path | None:
    """The folder with ``initdb`` and ``pg_ctl``, or None when no Postgres server is installed."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
    if found:
        return found[0].parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path and shutil.which("pg_ctl") else None


def unavailable() -> str | None:
    """Why a throwaway server cannot start here, or None when it can."""
    if postgres_bin() is None:
        return "no Postgres server binaries (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a postgres user to run the server as"
    try:
        import langgraph.checkpoint.postgres  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "langgraph-checkpoint-postgres is not installed (pip install '.[postgres]')"
    return None


@contextmanager
def throwaway_postgres(durable: bool = False) -> Iterator[str]:
    """Start a Postgres server in a new temporary folder; yield its ``postgresql://`` URL; stop it
    and remove the folder. ``durable`` off skips ``fsync`` (tests); on, the server's defaults."""
    binaries = postgres_bin()
    assert binaries is not None, unavailable()
    prefix: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="aisearch-pg-"))  # under /tmp: the postgres user can reach it
    if os.geteuid() == 0:
        prefix = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, user="postgres")
    data, port = root / "data", free_port()
    run = {"check": True, "capture_output": True, "cwd": root}
    initdb = [*prefix, str(binaries / "initdb"), "-D", str(data), "-U", "aisearch", "--auth=trust"]
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1" + ("" if durable else " -c fsync=off")
    pg_ctl = [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log")]
    try:
        subprocess.run(initdb, **run)
        subprocess.run([*pg_ctl, "-o", options, "-w", "start"], **run)
        yield f"postgresql://aisearch@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*pg_ctl, "-m", "fast", "-w", "stop"], check=False, capture_output=True, cwd=root)
        shutil.rmtree(root, ignore_errors=True)
