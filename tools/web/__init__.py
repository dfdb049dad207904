"""Web search for the bundled ``websearch`` MCP server: providers, SSRF-safe fetching, page reading."""
