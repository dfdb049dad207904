"""A real MCP test server (stdio) whose search results are web pages: one with an https address, one
whose "address" is a ``javascript:`` URL (a page must never make that a link)."""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("pages", log_level="WARNING")

RESULTS = [
    {
        "id": "w-himeji",
        "title": "Himeji Castle",
        "source": "https://castles.example/himeji",
        "snippet": "Himeji Castle was completed in 1609.",
    },
    {
        "id": "w-script",
        "title": "A page with a script address",
        "source": "javascript:document.body.dataset.pwned=3",
        "snippet": "Himeji Castle is white.",
    },
]


@mcp.tool()
def find_web_pages(query: str) -> dict[str, Any]:
    """Find web pages about castles: each result has an id, title, source address and snippet."""
    return {"query": query, "results": RESULTS}


if __name__ == "__main__":
    mcp.run()
