"""The catalogue (catalogue entries, mcpServers files, bundled servers) and its index's build and reuse."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.support.tool_catalog import CATALOG, BagOfWordsEmbedder, write_catalog
from tools.catalog.index import open_tool_index
from tools.catalog.load import CatalogError, load_catalog
from tools.index.store import IndexStore


def catalog_of(*files: Path, mcp_config: Path | None = None, bundled: bool = False):
    return asyncio.run(load_catalog(files, mcp_config=mcp_config, bundled=bundled))


def test_catalogue_entries_and_mcp_servers_files_merge_in_order(tmp_path: Path) -> None:
    entries = write_catalog(tmp_path / "tools.json")
    mcp = tmp_path / "mcp.json"
    mcp.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {
                        "command": "notes-mcp",
                        "description": "personal notes",
                        "tools": [
                            {
                                "name": "add_note",
                                "description": "add a note",
                                "inputSchema": {"type": "object"},
                            }
                        ],
                    },
                    "Weather": {"disabled": True},
                }
            }
        )
    )
    catalog = catalog_of(entries, mcp_config=mcp)
    assert list(catalog.servers) == ["Trains", "Files", "Editor", "notes"]
    notes = catalog.servers["notes"]
    assert notes.description == "personal notes"
    assert [t.name for t in notes.tools] == ["add_note"]
    assert notes.connections == {"notes": {"command": "notes-mcp"}}  # what a hub would start
    assert catalog.servers["Trains"].connections == {"trains": {"command": "trains-mcp"}}
    assert catalog.owners()["write_file"] == ["Files", "Editor"]
    assert catalog.tool_count() == 5


def test_bundled_servers_describe_themselves_without_starting() -> None:
    catalog = catalog_of(bundled=True)
    assert {"python", "clock"} <= set(catalog.servers)
    assert "calculate" in {t.name for t in catalog.servers["python"].tools}
    assert catalog.servers["clock"].description  # the FastMCP instructions
    assert catalog.servers["clock"].connections["clock"]["transport"] == "stdio"


def test_a_malformed_catalogue_is_a_catalog_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"servers": 3}')
    with pytest.raises(CatalogError, match="expected a list"):
        catalog_of(bad)
    with pytest.raises(CatalogError, match="not found"):
        catalog_of(tmp_path / "missing.json")


def test_index_is_reused_without_embedding_and_updated_incrementally(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index")
    embedder = BagOfWordsEmbedder()
    catalog = catalog_of(write_catalog(tmp_path / "tools.json"))
    first = open_tool_index(catalog, store=store, embedder=embedder)
    # 4 servers x (description + summary) + 5 tools
    assert first.embedded == len(first.entries) == 13
    assert len(embedder.encoded) == 13

    again = open_tool_index(catalog, store=IndexStore(tmp_path / "index"), embedder=embedder)
    assert again.embedded == 0 and len(embedder.encoded) == 13  # nothing re-embedded
    assert again.fingerprint == first.fingerprint
    assert [e.id for e in again.entries] == [e.id for e in first.entries]

    changed = json.loads(json.dumps(CATALOG))
    changed[1]["tools"]["trains"]["tools"][0]["description"] = "train tickets and seat booking"
    del changed[3]
    updated = open_tool_index(
        catalog_of(write_catalog(tmp_path / "tools.json", changed)), store=store, embedder=embedder
    )
    assert updated.embedded == 1  # the changed tool's record (the summary names tools, not their texts)
    assert embedder.encoded[-1] == "Trains | get_tickets: train tickets and seat booking"
    stored = set(store.collection("catalog").all_ids())
    assert stored == {e.id for e in updated.entries}  # the removed server left chromadb
    assert all(e.server != "Editor" for e in updated.entries)
