"""The llama-server's own process: ``python -m models.llama_server_launcher --config PATH``.

``models/local_server.py`` starts this module detached, as it starts ``models/server_launcher.py``
for llama-cpp-python. It runs the llama-server router of ``config.json`` (``models/llama_server.py``)
as its child and stays as long as the router runs, so the recorded pid, revival and ``aisearch models
stop`` work as with the other server:

- it exits when the router exits (a crash, the OOM killer), so the manager sees a dead server and
  starts a new one; the router's model instances exit with the router (they watch its pipe);
- the router gets SIGTERM when this process ends, however it ends (``PR_SET_PDEATHSIG``);
- with ``idle_s`` > 0 it stops the router and exits after ``idle_s`` seconds in which no model has
  processed a token and none has a request in flight (read from each model's ``/metrics``), so a
  server nobody uses gives its memory back, like ``models/idle_http.py``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from typing import Any

from models.server_process import terminate

log = logging.getLogger("models.llama_server_launcher")

BUSY_GAUGES = ("llamacpp:requests_processing", "llamacpp:requests_deferred")
WORK_COUNTERS = (
    "llamacpp:prompt_tokens_total",
    "llamacpp:prompt_tokens_cached_total",
    "llamacpp:tokens_predicted_total",
)
STOP_TIMEOUT_S = 20.0
PR_SET_PDEATHSIG = 1


def parse_metrics(text: str) -> dict[str, float]:
    """The samples of a Prometheus text page: ``{name: value}`` (labelled samples skipped)."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#") and "{" not in parts[0]:
            try:
                samples[parts[0]] = float(parts[1])
            except ValueError:
                continue
    return samples


def model_metrics(host: str, port: int, alias: str, timeout_s: float = 5.0) -> dict[str, float]:
    """One model's ``/metrics`` through the router (never loading it), or ``{}`` if it does not answer."""
    query = urllib.parse.urlencode({"model": alias, "autoload": "false"})
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics?{query}", timeout=timeout_s) as resp:  # noqa: S310 (loopback)
            return parse_metrics(resp.read().decode(errors="replace"))
    except (OSError, ValueError):
        return {}


def activity(host: str, port: int, aliases: list[str]) -> tuple[bool, tuple[float, ...], bool]:
    """Whether any model has a request in flight, the models' work counters (they grow with use),
    and whether any model answered at all (none does while they load)."""
    busy, counters, answered = False, [], False
    for alias in aliases:
        metrics = model_metrics(host, port, alias)
        answered = answered or bool(metrics)
        busy = busy or any(metrics.get(name, 0.0) > 0 for name in BUSY_GAUGES)
        counters += [metrics.get(name, 0.0) for name in WORK_COUNTERS]
    return busy, tuple(counters), answered


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def supervise(config: dict[str, Any], stop: threading.Event) -> int:
    """Run the router until it exits, ``stop`` is set, or it has been idle ``config["idle_s"]`` seconds
    since a model first answered (loading the models is not idleness: a slow start on a busy
    machine must not stop the server before its first request)."""
    router = subprocess.Popen(config["command"], stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)  # noqa: S603 (the configured binary)
    log.info("llama-server router started (pid %d): %s", router.pid, " ".join(config["command"]))
    host, port, aliases = str(config["host"]), int(config["port"]), list(config["aliases"])
    idle_s = float(config.get("idle_s", 0.0))
    poll_s = min(max(idle_s / 4, 0.1), 5.0) if idle_s > 0 else 1.0
    last_active = time.monotonic()
    last_counters: tuple[float, ...] = ()
    ready = False
    while not stop.wait(poll_s):
        code = router.poll()
        if code is not None:
            log.error("llama-server exited with code %d", code)
            return code or 1
        if idle_s <= 0:
            continue
        busy, counters, answered = activity(host, port, aliases)
        ready = ready or answered
        if not ready or busy or counters != last_counters:
            last_active, last_counters = time.monotonic(), counters
        elif time.monotonic() - last_active >= idle_s:
            log.warning("no request for %.0f s: stopping llama-server and exiting", idle_s)
            break
    terminate(router.pid, STOP_TIMEOUT_S)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry of the process: ``python -m models.llama_server_launcher --config PATH``."""
    parser = argparse.ArgumentParser(prog="python -m models.llama_server_launcher")
    parser.add_argument("--config", required=True, help="config.json written by models/llama_server.py")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    with open(args.config, encoding="utf-8") as handle:
        config = json.load(handle)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return supervise(config, stop)


if __name__ == "__main__":
    raise SystemExit(main())
