"""MCP server "docsearch": hybrid search (BM25 + MiniLM, fused with RRF) over a local document index.

Run alone with ``python -m tools.servers.docsearch_server`` (stdio) or
``python -m tools.servers.docsearch_server --transport streamable-http --port 8103``. Over HTTP it
also serves ``GET /health`` and ``POST /embed`` (its MiniLM for other processes,
``tools/servers/embed_route.py``) and, with ``--idle-timeout S``, exits after S seconds without a
request: that is how the CLI runs it as the long-lived document server (``tools/docs_server.py``).

* Index: ``$AISEARCH_INDEX_DIR`` (default ``~/.local/share/aisearch/index``); fill it with
  ``aisearch index PATH... [--collection NAME]``.
* Default collection ``docs``: when it does not exist, the server builds it in the background from
  the Python standard library documentation (``pydoc_data`` topics and module docstrings);
  searches during the build get a "being built (n of m passages)" error. Turn this off with
  ``--no-default-build`` or ``AISEARCH_DOCSEARCH_DEFAULT_BUILD=0``.
* Optional LLM listwise rerank (RankGPT sliding window): ``--rerank`` or
  ``AISEARCH_DOCSEARCH_RERANK=1``; the model is ``$AISEARCH_RERANK_BASE_URL``/``_MODEL``, else the
  executor model of the aisearch settings.

The server answers at once: the embedding model loads in a background thread right after start
(``--no-warmup`` or ``AISEARCH_DOCSEARCH_WARMUP=0`` defers it to the first search).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.fastmcp import FastMCP

from tools.index.first_run import default_build_enabled
from tools.index.service import DocSearch
from tools.index.store import IndexStore
from tools.servers.common import CLOSED_WORLD, serve, server_arg_parser
from tools.servers.embed_route import add_routes
from tools.settings import docsearch_settings

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8103

mcp = FastMCP(
    "docsearch",
    instructions=(
        "Search a local index of documents and read passages, with titles and sources to cite. "
        "By default the index holds the Python standard library documentation; users add their own "
        "folders (Markdown, text, HTML, JSONL) with `aisearch index PATH`."
    ),
    log_level="WARNING",
)

_service: DocSearch | None = None


def configure(
    index_dir: str | None = None,
    *,
    build_default: bool | None = None,
    rerank: bool | None = None,
    collection: str | None = None,
) -> DocSearch:
    """Create the service the tools use (from arguments, else the environment).

    ``collection`` (or ``$AISEARCH_DOCSEARCH_COLLECTION``) is the collection searched when a call
    names none (default ``docs``).
    """
    global _service
    settings = docsearch_settings()
    if build_default is None:
        build_default = default_build_enabled()
    reranker = None
    if rerank if rerank is not None else settings.rerank:
        from models.factory import chat_from_environment
        from tools.index.rerank import ListwiseReranker

        reranker = ListwiseReranker(_lazy_chat(chat_from_environment))
    _service = DocSearch(
        IndexStore(index_dir) if index_dir else IndexStore(),
        build_default=build_default,
        reranker=reranker,
        default_collection=collection or settings.collection,
    )
    return _service


def _lazy_chat(factory: Any) -> Any:
    """Resolve the rerank endpoint on first use (it may start the local model server)."""
    holder: dict[str, Callable[[list[dict[str, str]]], str]] = {}

    def chat(messages: list[dict[str, str]]) -> str:
        if "fn" not in holder:
            holder["fn"] = factory()
        return holder["fn"](messages)

    return chat


def service() -> DocSearch:
    """The configured service (configured from the environment on first use)."""
    return _service or configure()


@mcp.tool(annotations=CLOSED_WORLD)
async def search(query: str, k: int = 5, collection: str = "", full: bool = False) -> dict[str, Any]:
    """Search local documents and return the best passages, each with an id, title, source and snippet.

    Hybrid ranking: keyword (BM25) and semantic (MiniLM embeddings) results fused together, so both
    exact names ("json.dumps", "asyncio.gather") and paraphrased questions work. The default
    collection "docs" holds the Python standard library documentation (language reference topics
    and the docstrings of common modules) plus any folders the user indexed; other collections are
    created with `aisearch index PATH --collection NAME`. Cite results by their title and source;
    call `read` with a result's id for the passage's full text.

    Example questions: "How do I pretty-print JSON in Python?", "What does the with statement do?",
    "How to format a float with two decimals in an f-string?", "Which function sorts a list in
    place?", "How do I run a shell command and capture its output?", "What does our design doc say
    about caching?" (with collection="notes").

    Args:
        query: A question or keywords (one topic per search works best).
        k: Number of passages to return (1-20, default 5).
        collection: Which collection to search (default: the server's default collection, "docs").
        full: Also return each passage's whole text (not only its snippet).
    """
    docsearch = service()
    return await anyio.to_thread.run_sync(
        docsearch.search, query, k, collection or docsearch.default_collection, full
    )


@mcp.tool(annotations=CLOSED_WORLD)
async def follow_links(
    passage_ids: list[str], query: str = "", k: int = 2, collection: str = "", full: bool = False
) -> dict[str, Any]:
    """Find the passages about the people, places, works and organisations that found passages name.

    The next step of a multi-hop question: after `search` finds the film, `follow_links` on its
    passage finds the article about the director it names. A document counts as named when its
    title appears in the passage's text (or in the query). Results come in the shape of `search`,
    those that also match the query first.

    Args:
        passage_ids: The "id"s of earlier `search` results.
        query: The question being answered (ranks the linked passages; its own names count too).
        k: Number of passages to return (1-20, default 2).
        collection: The collection the ids came from (default: the server's default collection).
        full: Also return each passage's whole text (not only its snippet).
    """
    docsearch = service()
    return await anyio.to_thread.run_sync(
        docsearch.follow, passage_ids, query, k, collection or docsearch.default_collection, full
    )


@mcp.tool(annotations=CLOSED_WORLD)
async def read(passage_id: str, collection: str = "") -> dict[str, Any]:
    """Read the full text of one passage found by `search` (its id, title, source and text).

    Use it when a search snippet is cut short or more context is needed to answer, e.g. to see the
    whole description of a function's parameters after "How do I read a CSV file with a header?".

    Args:
        passage_id: The "id" of a search result.
        collection: The collection the result came from (default: the server's default collection).
    """
    docsearch = service()
    return await anyio.to_thread.run_sync(
        docsearch.read, passage_id, collection or docsearch.default_collection
    )


def describe_search_tool(docsearch: DocSearch, building_default: bool = False) -> str:
    """Re-register ``search`` with a first line naming the collections and what they hold, so the
    Master and the tool retriever know what it can answer (the rest of the docstring follows)."""
    from tools.index.describe import STDLIB, describe_collections

    lines = describe_collections(docsearch.store)
    if building_default and not any(line.startswith(f"{docsearch.default_collection}:") for line in lines):
        lines.append(f"{docsearch.default_collection}: {STDLIB} (being built)")
    first, _, rest = (search.__doc__ or "").partition("\n")
    if lines:
        first = (
            f"Search local documents ({'; '.join(lines)}) for passages with an id, title, source and snippet."
        )
    description = first + "\n" + inspect.cleandoc(rest)
    mcp.remove_tool("search")
    mcp.add_tool(search, description=description)
    return description


def main(argv: list[str] | None = None) -> None:
    """Run the "docsearch" MCP server over stdio (default) or streamable HTTP.

    Args:
        argv: Command-line arguments (defaults to ``sys.argv[1:]``).
    """
    parser = server_arg_parser("MCP server 'docsearch': search and read local documents.", DEFAULT_PORT)
    parser.add_argument(
        "--index-dir", help="index directory (default $AISEARCH_INDEX_DIR or ~/.local/share/aisearch/index)"
    )
    parser.add_argument(
        "--no-default-build",
        action="store_true",
        help="do not build the default 'docs' collection when missing",
    )
    parser.add_argument(
        "--collection",
        help="collection searched when a call names none (default $AISEARCH_DOCSEARCH_COLLECTION or docs)",
    )
    parser.add_argument("--rerank", action="store_true", help="LLM listwise rerank of the top 20 (slow)")
    parser.add_argument(
        "--no-warmup", action="store_true", help="load the embedding model on the first search"
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="streamable-http: exit after this many seconds without a request (default 0: never)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    docsearch = configure(
        args.index_dir,
        build_default=False if args.no_default_build else None,
        rerank=args.rerank or None,
        collection=args.collection,
    )
    building = docsearch.start_default_build()
    if building:
        logger.warning("building the default collection %r in the background", docsearch.default_collection)
    elif not args.no_warmup and docsearch_settings().warmup:
        docsearch.start_warm_up()
    describe_search_tool(docsearch, building)
    add_routes(mcp, docsearch.embedder)
    serve(mcp, args, idle_s=args.idle_timeout)


if __name__ == "__main__":
    main()
