"""The default corpus: Python standard library documentation that ships with every Python.

Two kinds of pseudo-source (no files, nothing downloaded):

* ``pydoc:topics/<key>``: the language reference topics of ``pydoc_data.topics`` (what
  ``help("FORMATTING")`` shows: format strings, the ``with`` statement, dict methods, …);
* ``pydoc:module/<name>``: the docstrings of a set of common modules, one section per public
  function, class and method, with their signatures.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import logging
import re
import sys
import warnings
from collections.abc import Iterator
from types import ModuleType

from tools.index.documents import Block, Document
from tools.index.loaders import text_blocks
from tools.index.sources import LOADER_VERSION, Source
from tools.settings import index_settings

log = logging.getLogger(__name__)

PREFIX = "pydoc:"
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
COMMON_MODULES: tuple[str, ...] = (
    "builtins", "abc", "argparse", "array", "asyncio", "base64", "bisect", "calendar", "collections",
    "collections.abc", "concurrent.futures", "configparser", "contextlib", "copy", "csv", "dataclasses",
    "datetime", "decimal", "difflib", "enum", "fnmatch", "fractions", "functools", "glob", "gzip",
    "hashlib", "heapq", "hmac", "html", "http.client", "importlib", "inspect", "io", "ipaddress",
    "itertools", "json", "logging", "math", "mimetypes", "operator", "os", "os.path", "pathlib",
    "pickle", "platform", "pprint", "queue", "random", "re", "secrets", "shlex", "shutil", "socket",
    "sqlite3", "statistics", "string", "struct", "subprocess", "sys", "tarfile", "tempfile",
    "textwrap", "threading", "time", "timeit", "traceback", "types", "typing", "unicodedata",
    "unittest", "urllib.parse", "urllib.request", "uuid", "warnings", "weakref",
    "xml.etree.ElementTree", "zipfile", "zoneinfo",
)  # fmt: skip


def in_default_scope(key: str) -> bool:
    """Whether a manifest key belongs to the default corpus (so it may leave the index)."""
    return key.startswith(PREFIX)


def _digest(document: Document) -> str:
    digest = hashlib.sha256(f"{LOADER_VERSION}\x1f{PYTHON}\x1f{document.title}".encode())
    for block in document.blocks:
        digest.update(f"\x1e{block.section}\x1f{block.text}".encode())
    return digest.hexdigest()


def _source(document: Document) -> Source:
    return Source(key=document.source, digest=_digest(document), load=lambda: [document])


def topic_documents() -> Iterator[Document]:
    """One document per ``pydoc_data.topics`` entry, sectioned by its underlined headings."""
    from pydoc_data.topics import topics

    for key in sorted(topics):
        title, blocks = text_blocks(topics[key])
        yield Document(title=title or key, source=f"{PREFIX}topics/{key}", blocks=blocks, kind="pydoc-topic")


def _signature(obj: object) -> str:
    """The call signature, without memory addresses (they change between runs and would break
    the incremental digests)."""
    if not callable(obj):
        return ""
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    return _ADDRESS.sub("", text)


def _synopsis(doc: str) -> str:
    """The first sentence of a module docstring if it is short, else ""."""
    line = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    sentence = line.split(". ")[0].rstrip(".")
    return sentence if 0 < len(sentence) <= 70 and (line.endswith(".") or ". " in line) else ""


def _doc_blocks(text: str | None, section: str) -> list[Block]:
    if not text:
        return []
    _, blocks = text_blocks(text)
    return [Block(text=block.text, section=section) for block in blocks]


def _public_members(module: ModuleType) -> list[tuple[str, object]]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    members: list[tuple[str, object]] = []
    for name in sorted(set(names)):
        obj = getattr(module, name, None)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue
        if inspect.isclass(obj) and issubclass(obj, BaseException) and module.__name__ == "builtins":
            continue  # the built-in exceptions: the "exceptions" topic covers them
        home = getattr(obj, "__module__", None)
        if (
            module.__name__ != "builtins"
            and home not in (module.__name__, f"_{module.__name__}")
            and (names is not getattr(module, "__all__", None))
        ):
            continue  # imported from elsewhere and not re-exported on purpose
        members.append((name, obj))
    return members


def module_document(name: str) -> Document | None:
    """The docstrings of module ``name`` as one document (``None`` if it cannot be imported)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - an optional module missing on this build
        log.info("skipped module %s: %s", name, exc)
        return None
    doc = inspect.getdoc(module) or ""
    synopsis = _synopsis(doc)
    title = f"{name} — {synopsis}" if synopsis else name
    blocks = _doc_blocks(doc, name)
    for member, obj in _public_members(module):
        qualified = f"{name}.{member}" if name != "builtins" else member
        blocks += _doc_blocks(inspect.getdoc(obj), f"{qualified}{_signature(obj)}")
        if inspect.isclass(obj):
            for attr, value in sorted(vars(obj).items()):
                if attr.startswith("_") or not callable(value) or not getattr(value, "__doc__", None):
                    continue
                method = getattr(obj, attr, value)
                blocks += _doc_blocks(inspect.getdoc(method), f"{qualified}.{attr}{_signature(method)}")
    page = name if name != "builtins" else "functions"
    return Document(
        title=title,
        source=f"{PREFIX}module/{name}",
        url=f"https://docs.python.org/{PYTHON}/library/{page}.html",
        blocks=blocks,
        kind="pydoc-module",
    )


def stdlib_sources(modules: tuple[str, ...] | None = None, topics: bool | None = None) -> list[Source]:
    """Sources of the default corpus: every pydoc topic and the docstrings of ``modules``.

    Defaults come from ``$AISEARCH_DEFAULT_CORPUS_MODULES`` (comma-separated module names; empty
    for none; unset for :data:`COMMON_MODULES`) and ``$AISEARCH_DEFAULT_CORPUS_TOPICS`` (``0`` to
    leave out the language reference topics).
    """
    settings = index_settings()
    if modules is None:
        raw = settings.corpus_modules
        modules = COMMON_MODULES if raw is None else tuple(m.strip() for m in raw.split(",") if m.strip())
    if topics is None:
        topics = settings.corpus_topics
    documents = list(topic_documents()) if topics else []
    documents += [doc for doc in map(module_document, modules) if doc is not None and doc.blocks]
    return [_source(doc) for doc in documents]
