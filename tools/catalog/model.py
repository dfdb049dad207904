"""The catalogue's records: MCP servers and the tools they own (Tool-to-Agent's bipartite graph)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CatalogTool:
    """One tool of a server: its MCP name, description and input schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class CatalogServer:
    """One MCP server: an id (unique in the catalogue), what it does, its tools and how to start it.

    ``connections`` is the server's ``mcpServers`` object (name -> entry), empty when the catalogue
    only describes it; ``source`` says where the record came from (a file, ``bundled``, ``mcp.json``).
    """

    id: str
    description: str = ""
    tools: tuple[CatalogTool, ...] = ()
    category: str = ""
    connections: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    source: str = ""

    def profile(self) -> str:
        """The server's holistic description D_i (TURA Eq. 3): description, then each tool's line."""
        lines = [f"{self.id}: {self.description}".strip()]
        lines += [f"- {tool.name}: {tool.description.strip()}" for tool in self.tools]
        return "\n".join(lines)

    def profile_hash(self) -> str:
        """A hash of :meth:`profile`: the synthetic-query cache key (new text, new queries)."""
        return hashlib.sha256(self.profile().encode()).hexdigest()[:20]


@dataclass
class Catalog:
    """Servers by id, in the order they were added; a later record with the same id replaces one."""

    servers: dict[str, CatalogServer] = field(default_factory=dict)

    def add(self, server: CatalogServer) -> None:
        """Add or replace a server."""
        self.servers[server.id] = server

    def __len__(self) -> int:
        return len(self.servers)

    def tool_count(self) -> int:
        """Number of (server, tool) records."""
        return sum(len(server.tools) for server in self.servers.values())

    def owners(self) -> dict[str, list[str]]:
        """Tool name -> the ids of every server that has a tool of that name (names can repeat)."""
        owners: dict[str, list[str]] = {}
        for server in self.servers.values():
            for tool in server.tools:
                if server.id not in owners.setdefault(tool.name, []):
                    owners[tool.name].append(server.id)
        return owners
