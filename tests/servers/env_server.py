"""A real MCP test server (stdio) that reports the environment it was started with."""

from __future__ import annotations

import json
import os

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("envdump", log_level="WARNING")


@mcp.tool()
def environment() -> str:
    """The server process's environment variables, as a JSON object."""
    return json.dumps(dict(os.environ))


if __name__ == "__main__":
    mcp.run()
