"""Running the adversarial sandbox suites with the audit hook off, and with it on but defeated.

The audit hook is a tripwire, not a layer that holds: code inside can switch it off by walking a
refused call's traceback to the hook's ``deny`` function and replacing its ``__code__``. The
suites that show the operating system's layers hold alone run twice: once with the hook never
installed, once with it installed and defeated by the code itself before the attack.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tools.servers.sandbox import SandboxResult, run_sandboxed

DEFEAT_THE_HOOK = (
    "def _defeat_the_audit_hook():\n"
    "    import os\n"
    "    try:\n"
    "        os.kill(-1, 0)\n"  # refused by the hook, which raises from its deny function
    "    except PermissionError as exc:\n"
    "        tb = exc.__traceback__\n"
    "        while tb.tb_next is not None:\n"
    "            tb = tb.tb_next\n"
    "        tb.tb_frame.f_back.f_locals['deny'].__code__ = (lambda message: None).__code__\n"
    "    import gc\n"
    "    gc.get_objects()\n"  # refused while the hook holds: the run fails here if it still does
    "_defeat_the_audit_hook()\n"
    "del _defeat_the_audit_hook\n"
)
PREFIX = f"exec({DEFEAT_THE_HOOK!r})\n"  # one line: the code's own lines move by one


def without_cgroup(missing: tuple[str, ...]) -> tuple[str, ...]:
    """What a run missed besides a memory cgroup (whose absence ``test_sandbox_resources`` covers)."""
    return tuple(m for m in missing if not m.startswith("no memory cgroup"))


NAMESPACES_MISSING = without_cgroup(run_sandboxed("1", namespaces=True).missing)
needs_namespaces = pytest.mark.skipif(
    bool(NAMESPACES_MISSING),
    reason=f"this OS refuses the sandbox's namespaces ({NAMESPACES_MISSING}); degradation tests cover it",
)


def defeating_the_hook(run: Callable[..., SandboxResult] = run_sandboxed) -> Callable[..., SandboxResult]:
    """``run_sandboxed`` where ``audit_hook=False`` means: installed, then defeated by the code."""

    def run_defeated(code: str, **kwargs: Any) -> SandboxResult:
        if kwargs.get("audit_hook", True) is False:
            kwargs["audit_hook"] = True
            code = PREFIX + code
        return run(code, **kwargs)

    return run_defeated


@pytest.fixture(params=["hook-off", "hook-defeated"], autouse=True)
def hook_layer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs each test of the module that uses it twice (module-level ``run_sandboxed`` patched)."""
    if request.param == "hook-defeated":
        monkeypatch.setattr(request.module, "run_sandboxed", defeating_the_hook())
    return request.param
