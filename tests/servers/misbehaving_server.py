"""A real MCP test server (stdio) that misbehaves the way third-party servers do.

Written on the SDK's low-level ``Server`` so it can declare any input schema. Its start-up is
chosen by the first argument:

- ``ok``: serve normally;
- ``garbage-at-start``: write a line of invalid UTF-8 to stdout, then serve;
- ``garbage-later``: serve, and write invalid UTF-8 to stdout a moment after starting (as a
  server that logs to stdout does, while the client may still be starting other servers);
- ``hang-at-start``: never answer (sleep before serving);
- ``exit-at-start``: exit with status 2 before serving.

Its tools: ``echo`` (a schema with list-valued ``"type"``s), ``fields`` (properties named like
Python keywords, Pydantic members and names no identifier can hold; it answers with the arguments
it received, as JSON), ``garbage`` (writes invalid UTF-8 to
stdout before answering), ``hang`` (blocks the whole process, as a synchronous tool does) and
``crash`` (exits mid-call).
"""

from __future__ import annotations

import json
import os
import sys
import time

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

INVALID_UTF8 = b"\xff\xfe\xfa not utf-8 \xc3\x28\n"
ODD_NAMES = ("model_dump", "model_config", "class", "max-results", "with space", "_id", "__root__", "schema")
server: Server = Server("misbehaving")


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    """The tools, one of them with union types as JSON Schema allows them."""
    return [
        types.Tool(
            name="echo",
            description="Repeat a text a number of times.",
            inputSchema={
                "type": "object",
                "properties": {
                    "text": {"type": ["string", "null"], "description": "what to repeat"},
                    "times": {"type": ["integer", "string"], "default": 1},
                    "loud": True,
                },
                "required": ["text"],
            },
        ),
        types.Tool(
            name="fields",
            description="Answer with the arguments received.",
            inputSchema={
                "type": "object",
                "properties": {name: {"type": "string"} for name in ODD_NAMES},
                "required": ["model_dump", "_id"],
            },
        ),
        types.Tool(name="garbage", description="Answer after invalid UTF-8.", inputSchema={"type": "object"}),
        types.Tool(
            name="hang", description="Wait for the archive (never answers).", inputSchema={"type": "object"}
        ),
        types.Tool(name="crash", description="Exit mid-call.", inputSchema={"type": "object"}),
    ]


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[types.TextContent]:
    """Run one tool."""
    if name == "garbage":
        os.write(sys.stdout.fileno(), INVALID_UTF8)
        return [types.TextContent(type="text", text="after garbage")]
    if name == "fields":
        return [types.TextContent(type="text", text=json.dumps(arguments, sort_keys=True))]
    if name == "hang":
        time.sleep(3600)  # blocks the event loop: the server answers nothing else
    if name == "crash":
        os._exit(3)
    text = arguments.get("text") or ""
    return [types.TextContent(type="text", text=" ".join([text] * int(arguments.get("times", 1))))]


async def main() -> None:
    """Serve over stdio after the start-up the first argument chose."""
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    if mode == "garbage-at-start":
        os.write(sys.stdout.fileno(), INVALID_UTF8)
    elif mode == "hang-at-start":
        time.sleep(3600)
    elif mode == "exit-at-start":
        sys.exit(2)
    async with stdio_server() as (read, write), anyio.create_task_group() as group:
        if mode == "garbage-later":
            group.start_soon(_garbage_later)
        await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()


async def _garbage_later() -> None:
    await anyio.sleep(0.3)
    os.write(sys.stdout.fileno(), INVALID_UTF8)


if __name__ == "__main__":
    anyio.run(main)
