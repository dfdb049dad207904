"""The fault-injecting MCP proxy, over real stdio: failures, hangs cut off by the timeout, garbage."""

from __future__ import annotations

import time

import pytest

from tools.hub import ToolHub
from tools.servers.faults_server import FaultPlan, proxy_connection
from tools.session import ServerLimits

FAST = ServerLimits(start_timeout_s=20, probe_timeout_s=1, close_timeout_s=5)


def test_fault_plan_is_seeded_and_keeps_to_its_tools() -> None:
    draws = [FaultPlan({"calculate"}, 0.3, "mixed", seed=7).draw("calculate") for _ in range(1)]
    first = FaultPlan({"calculate"}, 0.3, "mixed", seed=7)
    second = FaultPlan({"calculate"}, 0.3, "mixed", seed=7)
    sequence = [first.draw("calculate") for _ in range(200)]
    assert sequence == [second.draw("calculate") for _ in range(200)] and draws[0] == sequence[0]
    assert 0.2 < sum(fault is not None for fault in sequence) / 200 < 0.4
    assert {"fail", "hang", "garbage"} <= set(sequence)
    assert all(first.draw("run_python") is None for _ in range(50))


@pytest.mark.slow
async def test_failures_hangs_and_garbage_reach_the_caller_as_data() -> None:
    connections = {
        "failing": proxy_connection("python", ["calculate"], rate=1.0, mode="fail"),
        "hanging": proxy_connection("python", ["calculate"], rate=1.0, mode="hang"),
        "garbled": proxy_connection("python", ["calculate"], rate=1.0, mode="garbage"),
    }
    async with ToolHub.open(connections, limits=FAST) as hub:
        failed = await hub.call("failing.calculate", {"expression": "2 + 2"}, timeout_s=5)
        assert not failed.ok and "injected failure" in (failed.error or "")
        untouched = await hub.call("failing.calculate_precise", {"expression": "2 + 2"}, timeout_s=5)
        assert untouched.ok and untouched.output == "4"

        clock = time.monotonic()
        hung = await hub.call("hanging.calculate", {"expression": "2 + 2"}, timeout_s=1.0)
        assert not hung.ok and "timed out after 1 s" in (hung.error or "")
        assert time.monotonic() - clock < 4, "the timeout cut the hanging call off"
        after = await hub.call("hanging.calculate_precise", {"expression": "3 * 3"}, timeout_s=5)
        assert after.ok and after.output == "9", "the server still answers after a hang"

        garbled = await hub.call("garbled.calculate", {"expression": "2 + 2"}, timeout_s=5)
        assert garbled.ok and "4" not in garbled.output and "\ufffd" in garbled.output
