"""The MCP catalogue and its tool index: servers and tools described without running them, indexed
together (Tool-to-Agent), augmented with synthetic queries (TURA) and retrieved per intent.

Importing this package is cheap: chromadb and the embedder load only when an index is opened.

* :func:`tools.catalog.load.build_catalog`: the catalogue from files, the bundled servers and ``mcp.json``.
* :func:`tools.catalog.index.open_tool_index`: build (or reuse) the index of a catalogue.
* :class:`tools.catalog.retrieve.ToolRetriever`: top-K servers and their top tools for a query.
"""
