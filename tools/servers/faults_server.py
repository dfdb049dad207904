"""MCP server "faults": another stdio MCP server behind a proxy that fails some of its calls.

For the tests and ``aisearch bench faults``: the proxy starts the upstream server, lists its tools
unchanged, and forwards each call, except that a call of one of the ``--tools`` is, at
``--rate`` (seeded, so a run is reproducible), turned into a fault of the ``--mode``:

- ``fail``: the call returns an MCP tool error;
- ``hang``: the call never answers (until ``--hang-s``), so the caller's timeout must cut it off;
- ``garbage``: the call "succeeds" with unreadable bytes instead of the tool's output;
- ``mixed``: one of the three, chosen by the same seeded generator.

Run it as ``python -m tools.servers.faults_server --tools calculate --rate 0.3 --seed 1 --
python -m tools.servers.python_server``. Every fault is logged on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
from contextlib import AsyncExitStack
from typing import Any, Literal

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from tools.registry import bundled_env

log = logging.getLogger(__name__)
FaultMode = Literal["fail", "hang", "garbage", "mixed"]
MODES: tuple[FaultMode, ...] = ("fail", "hang", "garbage", "mixed")
GARBAGE = "\x00\x1b[?\ufffd\x07\ufffd\x00\x02\x1f\ufffd"


class FaultPlan:
    """Which calls fail and how: a seeded draw per call of a faulty tool."""

    def __init__(self, tools: set[str], rate: float, mode: FaultMode, seed: int) -> None:
        if not 0 <= rate <= 1:
            raise ValueError(f"fault rate must be between 0 and 1, got {rate}")
        self.tools, self.rate, self.mode = tools, rate, mode
        self.random = random.Random(seed)

    def draw(self, tool: str) -> FaultMode | None:
        """The fault of this call of ``tool``, or None when it goes through."""
        if tool not in self.tools and "*" not in self.tools:
            return None
        if self.random.random() >= self.rate:
            return None
        if self.mode == "mixed":
            return self.random.choice(("fail", "hang", "garbage"))
        return self.mode


def build_server(upstream: ClientSession, plan: FaultPlan, hang_s: float) -> Server:
    """A low-level MCP server forwarding to ``upstream`` with ``plan``'s faults."""
    server: Server = Server("faults", instructions="A fault-injecting proxy of another MCP server.")

    # mcp's low-level decorators are unannotated
    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return (await upstream.list_tools()).tools

    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        fault = plan.draw(name)
        if fault is not None:
            log.info("injected fault %s into a call of %s", fault, name)
        if fault == "fail":
            text = f"injected failure: {name} is unavailable"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)
        if fault == "hang":
            await anyio.sleep(hang_s)
            text = f"injected hang of {name} ended after {hang_s:g} s"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)
        if fault == "garbage":
            # tools with an output schema must send structured content; FastMCP wraps text as "result"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=GARBAGE)],
                structuredContent={"result": GARBAGE},
                isError=False,
            )
        return await upstream.call_tool(name, arguments)

    return server


async def serve_proxy(command: list[str], plan: FaultPlan, hang_s: float) -> None:
    """Start the upstream server ``command`` and serve it over stdio with ``plan``'s faults."""
    # the proxy's own environment was already cut down to what the upstream server may read
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        upstream = await stack.enter_async_context(ClientSession(read, write))
        await upstream.initialize()
        server = build_server(upstream, plan, hang_s)
        reader, writer = await stack.enter_async_context(stdio_server())
        await server.run(reader, writer, server.create_initialization_options())


def proxy_connection(
    server: str,
    tools: list[str],
    *,
    rate: float,
    mode: FaultMode = "mixed",
    seed: int = 0,
    hang_s: float = 3600.0,
) -> dict[str, Any]:
    """A stdio connection to the bundled server ``server`` behind the proxy, faulting ``tools``."""
    from tools.registry import BUNDLED_SERVERS, DOCSEARCH_MODULE

    module = {**BUNDLED_SERVERS, "docsearch": DOCSEARCH_MODULE}[server]
    options = ["--tools", ",".join(tools), "--rate", str(rate), "--mode", mode, "--seed", str(seed)]
    return {
        "transport": "stdio",
        "command": sys.executable,
        "args": [
            "-m",
            "tools.servers.faults_server",
            *options,
            "--hang-s",
            str(hang_s),
            "--",
            sys.executable,
            "-m",
            module,
        ],
        "env": bundled_env(server),
    }


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The proxy's options and the upstream command (after ``--``)."""
    split = argv.index("--") if "--" in argv else len(argv)
    own, command = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(description="MCP proxy that injects failures into some tools' calls.")
    parser.add_argument("--tools", default="*", help="comma-separated tool names to fault ('*': all)")
    parser.add_argument("--rate", type=float, default=0.3, help="share of their calls that fail (0-1)")
    parser.add_argument("--mode", choices=MODES, default="mixed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang-s", type=float, default=3600.0, help="how long a hanging call sleeps")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(own)
    if not command:
        parser.error("give the upstream server's command after --")
    if not 0 <= args.rate <= 1:
        parser.error(f"--rate must be between 0 and 1, got {args.rate}")
    return args, command


def main(argv: list[str] | None = None) -> None:
    """Run the fault-injecting proxy over stdio."""
    args, command = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr)
    plan = FaultPlan({name.strip() for name in args.tools.split(",")}, args.rate, args.mode, args.seed)
    anyio.run(serve_proxy, command, plan, args.hang_s)


if __name__ == "__main__":
    main()
