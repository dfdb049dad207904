"""The live parts of an ``aisearch eval qa`` run: the graph's run, the baselines, the judge.

:func:`open_context` indexes the corpus (or reuses it) and opens them through ``core.run.open_run``
(the same model server, tool hub and chat models as the CLI), with the evaluation's changes: the
docsearch server over the evaluation index, and chat models that do not stream.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.run import Run, open_run
from evals.baseline import Baselines
from evals.judge import Judge

log = logging.getLogger(__name__)


@dataclass
class QAContext:
    """The live parts a run uses: the graph's run (models, tools), the baselines, the judge (and the
    judge's chat model itself, for judges with prompts of their own such as CQED's)."""

    run: Run
    baselines: Baselines | None
    judge: Judge | None
    judge_model: Any = None


def unstreamed(model: Any) -> Any:
    """The model with token streaming off: llama.cpp's server reports no usage on a stream, and the
    evaluation needs every role's tokens (no one watches the tokens arrive here)."""
    return model.model_copy(update={"streaming": False}) if getattr(model, "streaming", False) else model


def judge_chat_model(
    settings: Any, model: str | None = None, base_url: str | None = None
) -> tuple[Any, bool]:
    """The judge's chat model and whether to ask it for schema-constrained JSON.

    Default: the Writer's model (the local 1.5B unless configured otherwise). With ``model`` or
    ``base_url``: that model on that OpenAI-compatible endpoint (default the Writer's endpoint), its
    key in ``$AISEARCH_JUDGE_API_KEY``.
    """
    from pydantic import SecretStr

    from models.factory import CompatibleChatOpenAI, build_chat_model, local_http_clients, resolve_base_url

    if not (base_url or model):
        return unstreamed(build_chat_model("writer", settings)), settings.role("writer").constrain_json
    writer = settings.role("writer")
    judge_key = settings.evals.judge_api_key
    chat = CompatibleChatOpenAI(
        model=model or writer.model,
        base_url=base_url or resolve_base_url("writer", settings),
        api_key=judge_key or SecretStr(writer.api_key or "not-needed"),
        timeout=writer.timeout_s,
        max_retries=1,
        **(local_http_clients(settings) if base_url is None and writer.is_local else {}),
    )
    return chat, base_url is None


def build_judge(settings: Any, judge_model: str | None = None, judge_base_url: str | None = None) -> Judge:
    """The judge of ``aisearch eval qa`` and ``eval judge`` over :func:`judge_chat_model`."""
    chat, constrain = judge_chat_model(settings, judge_model, judge_base_url)
    return Judge(chat, constrain=constrain)


def point_docsearch(connections: dict[str, Any], index_dir: Path, collection: str) -> None:
    """Make the run's ``docsearch`` server serve ``collection`` of the index at ``index_dir``."""
    from tools.registry import DOCSEARCH_MODULE

    docsearch = dict(connections.get("docsearch") or next(iter(connections.values())))
    docsearch.update(
        transport="stdio",
        command=sys.executable,
        args=["-m", DOCSEARCH_MODULE, "--index-dir", str(index_dir), "--no-default-build"],
        env={**docsearch.get("env", {}), "AISEARCH_DOCSEARCH_COLLECTION": collection},
    )
    connections["docsearch"] = docsearch


@asynccontextmanager
async def open_context(
    settings: Any,
    *,
    corpus: Path | None,
    systems: tuple[str, ...],
    judge: bool,
    collection: str = "hotpotqa",
    index_dir: Path | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    show_progress: bool = False,
    search_index: bool = False,
) -> AsyncIterator[QAContext]:
    """Index the corpus (or reuse it), start the model server and the MCP servers, and yield the
    parts of a run; everything started here is stopped on exit.

    Without a corpus and with ``search_index``, the run searches an index that already exists:
    ``collection`` of ``index_dir`` (default the user's document index), for aisearch's docsearch
    server and the RAG baseline alike.
    """

    from evals.retrieval import default_eval_index_dir
    from models.factory import build_chat_model
    from tools.index.ingest import index_sources
    from tools.index.paths import default_index_dir
    from tools.index.search import Searcher
    from tools.index.sources import file_source
    from tools.index.store import IndexStore
    from tools.registry import load_connections

    connections = load_connections(settings.mcp_config, settings.websearch)
    searcher = None
    if corpus is not None:
        store = IndexStore(index_dir or default_eval_index_dir())
        corpus_path = Path(corpus).expanduser().resolve()
        if not corpus_path.is_file():
            raise FileNotFoundError(f"corpus not found: {corpus_path}")
        await asyncio.to_thread(
            index_sources,
            store.collection(collection),
            [file_source(corpus_path)],
            in_scope=lambda key: key != str(corpus_path),
            show_progress=show_progress,
        )
        searcher = Searcher(store.require(collection))
        point_docsearch(connections, store.root, collection)
    elif search_index:
        store = IndexStore(index_dir or default_index_dir())
        searcher = Searcher(store.require(collection))
        point_docsearch(connections, store.root, collection)

    def models(role: Any) -> Any:
        return unstreamed(build_chat_model(role, settings))

    async with open_run(settings, connections=connections, models=models) as run:
        for server, error in run.tools.server_errors.items():
            log.warning("MCP server %s unavailable: %s", server, error)
        needs_baselines = any(s in systems for s in ("rag", "closed_book"))
        baselines = Baselines(models("writer"), searcher) if needs_baselines else None
        grader, chat = None, None
        if judge:
            chat, constrain = judge_chat_model(settings, judge_model, judge_base_url)
            grader = Judge(chat, constrain=constrain)
        yield QAContext(run=run, baselines=baselines, judge=grader, judge_model=chat)
