"""Shared fixtures: settings, real MCP hubs over stdio, scripted models, resources, a graph runner."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from core.run import Run, RunContext
from core.settings import Settings
from core.settings_groups import Budgets, CacheSettings
from graph.builder import build_graph
from models import local_server
from models.config import ROLES, RoleSettings
from tests.support.fakes import DECOMPOSE, HOP_READ, MARK, ScriptedChatModel, copied, kept_whole
from tests.support.scheduling import group_of, make_scheduler
from tools.hub import ToolHub
from tools.index.ingest import index_paths, index_sources
from tools.index.sources import file_source
from tools.index.store import IndexStore
from tools.registry import bundled_connections

REPO = Path(__file__).resolve().parent.parent
FIXED_NOW = "2026-11-22T09:00:00+00:00"


def _scratch(prefix: str) -> str:
    """A folder of this test process's own, removed when the process exits (each xdist worker
    makes its own)."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


os.environ.setdefault("LANGSMITH_TRACING", "false")
# tests never touch the user's document index, nor build the default one in the background
os.environ["AISEARCH_INDEX_DIR"] = _scratch("aisearch-test-index-")
# nor the user's tool index, run vector cache or server listings
os.environ["AISEARCH_TOOLS_DIR"] = _scratch("aisearch-test-tools-")
# nor the user's distillation work: the executor role's default stays the bundled model
os.environ["AISEARCH_DISTILL_DIR"] = _scratch("aisearch-test-distill-")
os.environ["AISEARCH_DOCSEARCH_DEFAULT_BUILD"] = "0"
# nor the user's tool history (kept beside the thread store)
TEST_DB = Path(_scratch("aisearch-test-db-")) / "threads.sqlite"
os.environ["AISEARCH_DOCSEARCH_WARMUP"] = "0"
# CLI runs in tests start docsearch over stdio; tests/test_docs_server.py turns the long-lived one on
os.environ["AISEARCH_DOCS_SERVER"] = "0"
# the answer and tool-call caches stay off unless a test turns them on (tests/test_semantic_cache.py)
os.environ["AISEARCH_CACHE_ANSWERS"] = "0"
os.environ["AISEARCH_CACHE_TOOLS"] = "0"
# web search stays off unless a test configures it (tests/test_web_routing.py)
for _name in ("AISEARCH_SEARXNG_URL", "AISEARCH_WEB_PROVIDER", "TAVILY_API_KEY", "BRAVE_API_KEY"):
    os.environ.pop(_name, None)
# A run started in the background (``nohup .ci/run &``) inherits SIGINT ignored, and so would every
# process the Ctrl-C tests start: give them the terminal's default, as a user's shell does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# nor the real local models, unless a test is marked `local_model` (see pytest_runtest_setup)
os.environ[local_server.FORBID_ENV] = "1"
# On an xdist worker a model server gets the worker's share of the cores: llama.cpp's threads wait for
# each other at every step, so one that another worker's process preempts stalls them all.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    _share = (os.cpu_count() or 2) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("AISEARCH_LOCAL_N_THREADS", str(max(1, min(_share, 4))))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``--dist loadgroup``, the files of a group in :data:`tests.support.scheduling.GROUPS` run
    on one worker, one after another."""
    return make_scheduler(config, log) if config.getvalue("dist") == "loadgroup" else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A ``local_model`` test belongs to the ``local_model`` group (one worker runs them all)."""
    for item in items:
        if item.get_closest_marker("local_model") and group_of(item.nodeid) != "local_model":
            raise pytest.UsageError(
                f"{item.nodeid} is marked local_model: add its file to GROUPS in tests/support/scheduling.py"
            )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Turn the real model server off for a test not marked ``local_model``, before its fixtures run.

    The switch is an environment variable, so the processes the test starts (CLI runs, servers)
    inherit it; ``local_server.ensure_server_state`` raises while it is set.
    """
    if item.get_closest_marker("local_model"):
        os.environ.pop(local_server.FORBID_ENV, None)
    else:
        os.environ[local_server.FORBID_ENV] = "1"


@pytest.fixture(autouse=True)
def model_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail a test not marked ``local_model`` that tried to reach the real models, even if the code caught
    the error; yields the attempts seen in this process."""
    attempts: list[str] = []
    if request.node.get_closest_marker("local_model") is None:
        refuse = local_server.refuse_if_forbidden

        def recorded() -> None:
            try:
                refuse()
            except local_server.LocalModelsForbidden as exc:
                attempts.append(str(exc))
                raise

        monkeypatch.setattr(local_server, "refuse_if_forbidden", recorded)
    yield attempts
    if attempts:
        pytest.fail(f"reached the real local models without the local_model marker: {attempts[0]}")


@pytest.fixture(scope="session")
def local_model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of one real model server serving both bundled models (the assembled GGUFs), shared
    by the ``local_model`` tests of a worker; its state lives in a cache dir of its own. Of the
    environment it reads only ``AISEARCH_LOCAL_N_THREADS`` and ``AISEARCH_LOCAL_SERVER`` (which server)."""
    from core.settings import load_settings
    from models.assemble import model_path
    from models.config import LocalServerSettings
    from models.llama_server import binary_path
    from models.model_parts import REGISTRY

    cache = str(tmp_path_factory.mktemp("server-cache"))
    names = ("AISEARCH_LOCAL_N_THREADS", "AISEARCH_LOCAL_SERVER")
    settings = load_settings(env={name: os.environ[name] for name in names if os.environ.get(name)})
    gguf = {alias: str(model_path(alias)) for alias in REGISTRY}
    binary = binary_path(settings)  # the user's build, before the cache dir moves
    settings.local = LocalServerSettings(
        **{**settings.local.model_dump(), "gguf": gguf, "llama_server_bin": binary}
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AISEARCH_CACHE_DIR", cache)
        state, _ = local_server.ensure_server_state(settings)
    try:
        yield state["base_url"]
    finally:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("AISEARCH_CACHE_DIR", cache)
            local_server.stop_server()


def make_settings(
    routing: str = "llm", *, clarify: bool = False, review_plan: bool = False, **budgets: Any
) -> Settings:
    """Settings for tests: fake model names, default budgets unless overridden.

    The route is the scripted Master's (``routing="llm"``) unless a test asks for the cheap router;
    ``clarify`` and ``review_plan`` turn the human-in-the-loop pauses on. The caches are off.
    """
    return Settings(
        roles={
            role: RoleSettings(model=f"fake-{role}", base_url="http://unused.invalid/v1") for role in ROLES
        },
        budgets=Budgets(**budgets),
        db_path=TEST_DB,
        routing=routing,
        clarify=clarify,
        review_plan=review_plan,
        cache=CacheSettings(answers=False, tools=False),
    )


def facts_connection(**env: str) -> dict[str, Any]:
    """The flaky 'facts' test MCP server over stdio."""
    return {
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(REPO / "tests" / "servers" / "flaky_server.py")],
        "env": {**os.environ, **env},
    }


def sleepy_connections() -> dict[str, dict[str, Any]]:
    """The bundled python server and the sleepy test server (lookups that take time), over stdio."""
    sleepy = {
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(REPO / "tests" / "servers" / "sleepy_server.py")],
    }
    return {"python": bundled_connections()["python"], "sleepy": sleepy}


@pytest.fixture
async def sleepy_hub() -> AsyncIterator[ToolHub]:
    """A hub over :func:`sleepy_connections`: real stdio subprocesses."""
    async with ToolHub.open(sleepy_connections()) as opened:
        yield opened


def server_connections(with_facts: bool = True, **facts_env: str) -> dict[str, dict[str, Any]]:
    """Bundled servers (clock time fixed) plus, optionally, the facts server."""
    connections = bundled_connections()
    for connection in connections.values():
        connection["env"] = {**connection["env"], "AISEARCH_CLOCK_NOW": FIXED_NOW}
    if with_facts:
        connections["facts"] = facts_connection(**facts_env)
    return connections


@pytest.fixture
async def hub() -> AsyncIterator[ToolHub]:
    """A hub over the real bundled servers and the facts test server."""
    async with ToolHub.open(server_connections()) as opened:
        yield opened


class Team:
    """One scripted model per role, plus a runner of the graph with them."""

    def __init__(self, delay_s: float = 0.0) -> None:
        """Make empty scripts; ``delay_s`` slows every executor call (to observe overlap)."""
        self.models = {role: ScriptedChatModel(name_=role) for role in ROLES}
        self.models["reader"] = self.models["writer"]  # hops read with the Writer's model by default
        self.models["master"].defaults.append((DECOMPOSE, kept_whole))  # a question kept whole
        self.models["master"].defaults.append((MARK, copied))  # ... and nothing marked in it
        self.models["writer"].defaults.append((HOP_READ, "unknown"))  # a value the reader cannot tell
        self.models["executor"].delay_s = delay_s

    def __getitem__(self, role: str) -> ScriptedChatModel:
        return self.models[role]

    def resources(self, hub: ToolHub, settings: Settings | None = None) -> Run:
        """A run that uses the scripted models and ``hub``."""
        return Run(
            settings or make_settings(),
            lambda role: self.models[role],
            hub,
            now=lambda: datetime.fromisoformat(FIXED_NOW),
        )


@pytest.fixture
def team() -> Team:
    """Scripted models for the roles (the hop reader the Writer's)."""
    return Team()


async def run(
    resources: Run, query: str, *, thread: str = "t", checkpointer: Any = None
) -> tuple[dict[str, Any], list[str], Any]:
    """Run one turn; return the final state, the node trajectory from the checkpoints, and the graph."""
    graph = build_graph(checkpointer=checkpointer or InMemorySaver())
    config = {"configurable": {"thread_id": thread}}
    await graph.ainvoke({"query": query}, config, context=RunContext(run=resources))
    state = await graph.aget_state(config)
    return state.values, await trajectory(graph, config), graph


async def trajectory(graph: Any, config: dict[str, Any], last_turn_only: bool = True) -> list[str]:
    """Node names in execution order, read from the checkpoint history of the thread."""
    snapshots = [s async for s in graph.aget_state_history(config)]
    steps: list[list[str]] = []
    for snapshot in reversed(snapshots):
        names = sorted(task.name for task in snapshot.tasks if task.name != "__start__")
        if snapshot.metadata.get("source") == "input":
            steps.append(["|"])
        if names:
            steps.append(names)
    flat = [name for step in steps for name in step]
    if last_turn_only and "|" in flat:
        flat = flat[len(flat) - flat[::-1].index("|") :]
    return [name for name in flat if name != "|"]


def docsearch_connections(index_dir: Path) -> dict[str, dict[str, Any]]:
    """The bundled servers (clock time fixed) plus docsearch over ``index_dir``, over stdio."""
    connections = server_connections(with_facts=False)
    connections["docsearch"] = {
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-m", "tools.servers.docsearch_server", "--no-default-build"],
        "cwd": str(REPO),
        "env": {**os.environ, "AISEARCH_INDEX_DIR": str(index_dir)},
    }
    return connections


@pytest.fixture(scope="session")
def fixture_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture corpus indexed into a temporary index (collection 'docs')."""
    root = tmp_path_factory.mktemp("search-loop")
    shutil.copytree(REPO / "tests" / "fixtures" / "docs", root / "docs")
    index_paths([root / "docs"], "docs", store=IndexStore(root / "index"))
    return root / "index"


@pytest.fixture
async def docs_hub(fixture_index: Path) -> AsyncIterator[ToolHub]:
    """The bundled servers plus docsearch over the fixture index, all real stdio subprocesses."""
    async with ToolHub.open(docsearch_connections(fixture_index)) as opened:
        yield opened


HOTPOT_FIXTURE = REPO / "tests" / "fixtures" / "hotpot"


@pytest.fixture(scope="session")
def hotpot_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HotpotQA-style fixture corpus indexed as collection 'docs' (what docsearch searches)."""
    root = tmp_path_factory.mktemp("hotpot") / "index"
    corpus = HOTPOT_FIXTURE / "corpus.jsonl"
    index_sources(
        IndexStore(root).collection("docs"), [file_source(corpus)], in_scope=lambda key: key != str(corpus)
    )
    return root


@pytest.fixture
async def hotpot_hub(hotpot_index: Path) -> AsyncIterator[ToolHub]:
    """Real stdio MCP servers: the bundled ones plus docsearch over the fixture corpus."""
    async with ToolHub.open(docsearch_connections(hotpot_index)) as opened:
        yield opened
