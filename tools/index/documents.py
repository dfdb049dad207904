"""The units of the index: a loaded document (paragraph blocks) and a chunked passage."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Block:
    """One paragraph of a document and the section heading it sits under ("" before any)."""

    text: str
    section: str = ""


@dataclass
class Document:
    """A loaded document: a title, where it came from, and its paragraphs in order.

    ``key`` distinguishes documents of one source (a JSONL record id or line number); it is part
    of every passage id so that ids stay stable when other records change.
    """

    title: str
    source: str
    blocks: list[Block]
    url: str = ""
    key: str = ""
    kind: str = "text"


@dataclass
class Passage:
    """A chunk of a document, the unit that is embedded, ranked and cited."""

    id: str
    text: str
    title: str
    source: str
    position: int
    section: str = ""
    url: str = ""
    kind: str = "text"
    content_hash: str = field(default="")

    def embedding_text(self) -> str:
        """The text embedded and BM25-tokenised: title, section and body."""
        return embedding_text(self.title, self.section, self.text)

    def metadata(self) -> dict[str, str | int]:
        """Flat metadata for chromadb (no ``None`` values)."""
        return {
            "title": self.title,
            "section": self.section,
            "source": self.source,
            "url": self.url,
            "position": self.position,
            "kind": self.kind,
            "content_hash": self.content_hash,
        }


def embedding_text(title: str, section: str, text: str) -> str:
    """``"title — section\ntext"`` (the section only when it differs from the title)."""
    head = f"{title} — {section}" if section and section != title else title
    return f"{head}\n{text}" if head else text


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace to one space and strip the ends."""
    return _SPACE.sub(" ", text).strip()


def content_hash(title: str, text: str) -> str:
    """Hash of a passage's title and whitespace-normalised text (the de-duplication key)."""
    return hashlib.sha1(f"{normalize_space(title)}\x1f{normalize_space(text)}".encode()).hexdigest()[:16]


def passage_id(source: str, position_key: str, text: str) -> str:
    """A stable passage id: a hash of the source, the position in it, and the content."""
    digest = hashlib.sha1(f"{source}\x1f{position_key}\x1f{normalize_space(text)}".encode())
    return digest.hexdigest()[:16]
