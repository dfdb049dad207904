"""Pack a document's paragraphs into passages of about 150-200 words with stable ids.

The sizes suit all-MiniLM-L6-v2, which reads at most 256 word pieces: prose averages about 1.3
pieces per word, documentation with code about 2, so longer passages lose their tail in the dense
embedding (BM25 still sees the whole text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tools.index.documents import Block, Document, Passage, content_hash, passage_id

TARGET_WORDS = 150
MAX_WORDS = 200
MIN_WORDS = 50
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def _words(text: str) -> int:
    return len(text.split())


def _split_long(block: Block, target: int, limit: int) -> list[Block]:
    """Cut a paragraph longer than ``limit`` words into pieces of at most ``target`` words."""
    if _words(block.text) <= limit:
        return [block]
    if "\n" in block.text:  # code or preformatted text: cut between lines
        units = block.text.split("\n")
        joiner = "\n"
    else:
        units = _SENTENCE_END.split(block.text)
        joiner = " "
    pieces: list[str] = []
    current: list[str] = []
    count = 0
    for unit in units:
        size = _words(unit)
        if size > target:  # one huge sentence or line: hard cut by words
            if current:
                pieces.append(joiner.join(current))
                current, count = [], 0
            words = unit.split()
            pieces.extend(" ".join(words[i : i + target]) for i in range(0, len(words), target))
            continue
        if current and count + size > target:
            pieces.append(joiner.join(current))
            current, count = [], 0
        current.append(unit)
        count += size
    if current:
        pieces.append(joiner.join(current))
    return [Block(text=piece, section=block.section) for piece in pieces if piece.strip()]


def chunk_blocks(
    blocks: Iterable[Block], *, target: int = TARGET_WORDS, limit: int = MAX_WORDS, minimum: int = MIN_WORDS
) -> list[tuple[str, str]]:
    """Greedily pack paragraphs into ``(section, text)`` chunks of at most ``limit`` words.

    A new section starts a new chunk unless the current one is shorter than ``minimum`` words, in
    which case the next section (its heading kept as a line) is appended to it.
    """
    chunks: list[tuple[str, str]] = []
    parts: list[str] = []
    section = last = ""  # the chunk's (first) section, and the section of its last paragraph
    count = 0
    for block in (piece for original in blocks for piece in _split_long(original, target, limit)):
        size = _words(block.text)
        new_section = block.section != last
        if parts and (count + size > limit or (new_section and count >= minimum)):
            chunks.append((section, "\n\n".join(parts)))
            parts, count = [], 0
        if not parts:
            section = block.section
        elif new_section and block.section:
            parts.append(block.section)
        parts.append(block.text)
        last = block.section
        count += size
    if parts:
        chunks.append((section, "\n\n".join(parts)))
    return chunks


def chunk_document(document: Document, **sizes: int) -> list[Passage]:
    """Chunk one document into passages; ids hash the source, document key, position and text."""
    passages = []
    for position, (section, text) in enumerate(chunk_blocks(document.blocks, **sizes)):
        key = f"{document.key}#{position}"
        passages.append(
            Passage(
                id=passage_id(document.source, key, f"{document.title}\n{text}"),
                text=text,
                title=document.title,
                source=document.url or document.source,
                position=position,
                section=section,
                url=document.url,
                kind=document.kind,
                content_hash=content_hash(document.title, text),
            )
        )
    return passages


def chunk_documents(documents: Iterable[Document], **sizes: int) -> list[Passage]:
    """Chunk documents and drop passages whose title and text repeat an earlier one."""
    seen: set[str] = set()
    result = []
    for document in documents:
        for passage in chunk_document(document, **sizes):
            if passage.content_hash not in seen:
                seen.add(passage.content_hash)
                result.append(passage)
    return result
