"""How ``scripts/test.sh`` spreads the tests over pytest-xdist workers: one at a time, except the files
of a group, which one worker runs one after another.

xdist's own ``xdist_group`` mark does not group on pytest 9.2 (pytest-xdist#1386: the group rides on
the node id, which pytest no longer lets a plugin change), so the groups are named by file here.
"""

from __future__ import annotations

from typing import Any

# file -> group. The real models: one model server per worker, and the cores' time is theirs anyway.
# The sandbox: its cgroup tests compare the run cgroups before and after a run.
GROUPS = {
    "tests/test_distill_pipeline.py": "local_model",
    "tests/test_llama_server.py": "local_model",
    "tests/test_local_models.py": "local_model",
    "tests/test_local_roles.py": "local_model",
    "tests/test_model_guard.py": "local_model",
    "tests/test_sandbox.py": "sandbox",
    "tests/test_sandbox_escapes.py": "sandbox",
    "tests/test_sandbox_resources.py": "sandbox",
    "tests/test_sandbox_users.py": "sandbox",
}


def group_of(nodeid: str) -> str | None:
    """The group of a test's node id, or None for a test any worker may run."""
    return GROUPS.get(nodeid.split("::", 1)[0])


def make_scheduler(config: Any, log: Any) -> Any:
    """xdist's ``loadgroup`` scheduler, grouping by :data:`GROUPS` too (the largest group starts first)."""
    from xdist.scheduler import LoadGroupScheduling

    class FileGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid) or super()._split_scope(nodeid)

    return FileGroupScheduling(config, log)
