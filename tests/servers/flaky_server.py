"""A real MCP test server (stdio) whose tools fail, stall, return partial data or crash on demand."""

from __future__ import annotations

import os
import sys
import time

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("facts", log_level="WARNING")

BIRTHS = {"emperor wu of han": "156 BC", "julius caesar": "100 BC"}


@mcp.tool()
def birth_year(person: str) -> str:
    """Look up the birth year of a historical person (emperor, king, general) in the facts archive."""
    key = person.lower().strip()
    if "caesar" in key and os.environ.get("FACTS_FAIL_CAESAR"):
        raise RuntimeError("the facts archive is unavailable for this person")
    for name, year in BIRTHS.items():
        if name in key or key in name:
            return f"{name.title()} was born in {year}."
    return f"No record found for {person}."


@mcp.tool()
def biography(person: str) -> str:
    """Read a short biography of a historical person from the encyclopedia (backup to birth_year)."""
    key = person.lower()
    if "caesar" in key:
        return "Gaius Julius Caesar (born 12 July 100 BC) was a Roman general and statesman."
    return "Emperor Wu of Han (156 BC - 87 BC), born Liu Che, was the seventh emperor of the Han dynasty."


@mcp.tool()
def search(query: str, k: int = 2) -> dict:
    """Search the history archive for passages about a person or event."""
    passages = [
        {
            "id": "p-wu-1",
            "title": "Emperor Wu of Han",
            "source": "archive/wu.md",
            "score": 0.9,
            "snippet": "Emperor Wu of Han (156 BC - 87 BC), born Liu Che, was the seventh emperor of Han.",
        },
        {
            "id": "p-caesar-1",
            "title": "Julius Caesar",
            "source": "archive/caesar.md",
            "score": 0.8,
            "snippet": "Gaius Julius Caesar was born on 12 July 100 BC in Rome.",
        },
    ]
    words = set(query.lower().split())
    hits = [p for p in passages if words & set(p["snippet"].lower().replace(",", " ").split())]
    return {"query": query, "results": hits[:k]}


@mcp.tool()
def slow(seconds: float) -> str:
    """Sleep for a number of seconds (used to test timeouts)."""
    time.sleep(seconds)
    return "done"


@mcp.tool()
def crash() -> str:
    """Exit the server process abruptly (used to test a crashed server)."""
    sys.stdout.flush()
    os._exit(3)


if __name__ == "__main__":
    mcp.run()
