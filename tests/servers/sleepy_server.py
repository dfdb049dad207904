"""A real MCP test server (stdio) whose lookups take time: to watch a plan's tasks overlap, or not.

``lookup`` sleeps without blocking the server (calls of one session are served at once) and
reports, with its answer, when it started and finished on the server's clock.
"""

from __future__ import annotations

import time

import anyio
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("sleepy", log_level="WARNING")

YEARS = {"emperor wu of han": 156, "julius caesar": 100}


@mcp.tool()
async def lookup(entity: str, seconds: float = 0.5) -> dict:
    """Look up the birth year (BC) of a historical person in the slow archive."""
    started = time.time()
    await anyio.sleep(min(max(seconds, 0.0), 10.0))
    year = next((year for name, year in YEARS.items() if name in entity.lower()), None)
    return {"entity": entity, "year": year, "started": started, "finished": time.time()}


if __name__ == "__main__":
    mcp.run()
