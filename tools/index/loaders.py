"""Read files into :class:`Document` objects: Markdown, plain text / reST, HTML and JSONL."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from tools.index.documents import Block, Document, normalize_space
from tools.index.html_text import html_to_blocks

log = logging.getLogger(__name__)

MARKDOWN = {".md", ".markdown", ".mdx"}
TEXT = {".txt", ".text", ".rst"}
HTML = {".html", ".htm", ".xhtml"}
JSONL = {".jsonl", ".ndjson"}
SUPPORTED = MARKDOWN | TEXT | HTML | JSONL
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}

_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-~^*+#\"'`])\1{2,}\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_FRONT_TITLE = re.compile(r"^title:\s*(.+?)\s*$", re.MULTILINE)


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """Every supported file under ``paths`` (files are taken as given), resolved and sorted.

    Hidden directories and tool folders (``.git``, ``node_modules``, virtualenvs) are skipped.

    Raises:
        FileNotFoundError: When a path does not exist.
    """
    found: set[Path] = set()
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"no such file or directory: {raw}")
        path = path.resolve()
        if path.is_file():
            found.add(path)
            continue
        for candidate in path.rglob("*"):
            rel = candidate.relative_to(path).parts
            if any(part in _SKIP_DIRS or part.startswith(".") for part in rel[:-1]):
                continue
            if candidate.is_file() and candidate.suffix.lower() in SUPPORTED and not rel[-1].startswith("."):
                found.add(candidate)
    return sorted(found)


def load_file(path: Path) -> list[Document]:
    """Load one file into documents (one per file, or one per JSONL record).

    Unknown extensions are read as plain text. Undecodable bytes are replaced.
    """
    suffix = path.suffix.lower()
    raw = path.read_text(encoding="utf-8", errors="replace")
    source = str(path)
    if suffix in JSONL:
        return list(_jsonl_documents(raw, source))
    if suffix in HTML:
        title, blocks = html_to_blocks(raw)
        return [Document(title=title or path.stem, source=source, blocks=blocks, kind="html")]
    if suffix in MARKDOWN:
        title, blocks = markdown_blocks(raw)
        return [Document(title=title or path.stem, source=source, blocks=blocks, kind="markdown")]
    title, blocks = text_blocks(raw)
    return [Document(title=title or path.stem, source=source, blocks=blocks, kind="text")]


def _jsonl_documents(raw: str, source: str) -> Iterator[Document]:
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            log.warning("%s:%d: skipped a line that is not JSON (%s)", source, number, exc)
            continue
        if not isinstance(record, dict):
            log.warning("%s:%d: skipped a line that is not a JSON object", source, number)
            continue
        text = record.get("text", record.get("contents", record.get("body", "")))
        if isinstance(text, list):
            text = " ".join(str(part) for part in text)
        text = str(text or "")
        title = normalize_space(str(record.get("title") or ""))
        if not text.strip():
            continue
        key = str(record.get("id") or record.get("_id") or f"L{number}")
        blocks = [Block(text=part) for part in _paragraphs(text)]
        url = str(record.get("url") or "")
        yield Document(
            title=title or f"line {number}", source=source, blocks=blocks, url=url, key=key, kind="jsonl"
        )


def _paragraphs(text: str) -> list[str]:
    return [normalize_space(part) for part in re.split(r"\n\s*\n", text) if part.strip()]


def markdown_blocks(text: str) -> tuple[str, list[Block]]:
    """Split Markdown into ``(title, blocks)``: headings become sections, code fences stay whole.

    The title is the front-matter ``title:``, else the first level-1 heading ("" if none).
    """
    title, lines = _front_matter(text.splitlines())
    blocks: list[Block] = []
    section, buffer, fence = "", [], ""

    def flush(code: bool = False) -> None:
        body = "\n".join(buffer).strip("\n") if code else _LINK.sub(r"\1", normalize_space(" ".join(buffer)))
        if body.strip():
            blocks.append(Block(text=body, section=section))
        buffer.clear()

    for line in lines:
        if fence:
            buffer.append(line)
            if line.strip().startswith(fence):
                fence = ""
                flush(code=True)
            continue
        if match := _FENCE.match(line):
            flush()
            fence = match.group(1)
            buffer.append(line)
            continue
        heading = _ATX.match(line)
        setext = _SETEXT.match(line)
        if heading or (setext and len(buffer) == 1):
            name = normalize_space(heading.group(2) if heading else buffer.pop())
            flush()
            level = len(heading.group(1)) if heading else (1 if line.strip().startswith("=") else 2)
            if level == 1 and not title:
                title = name
            section = name
        elif setext or not line.strip():
            flush()  # a horizontal rule or a blank line ends the paragraph
        else:
            buffer.append(line)
    flush(code=bool(fence))
    return title, blocks


def _front_matter(lines: list[str]) -> tuple[str, list[str]]:
    if not lines or lines[0].strip() != "---":
        return "", lines
    end = next((i for i, line in enumerate(lines[1:], start=1) if line.strip() in ("---", "...")), None)
    if end is None:
        return "", lines
    match = _FRONT_TITLE.search("\n".join(lines[1:end]))
    return (match.group(1).strip("\"'") if match else ""), lines[end + 1 :]


def text_blocks(text: str) -> tuple[str, list[Block]]:
    """Split plain text or reST into ``(title, blocks)``; underlined lines become section headings.

    An underlined heading is a short line followed by a line of one repeated punctuation character
    (``====``, ``----``, ``****``), as in reST and the pydoc topics. The title is the first one.
    """
    lines = text.splitlines()
    title, section = "", ""
    blocks: list[Block] = []
    buffer: list[str] = []

    def flush() -> None:
        if buffer:
            indented = all(line.startswith((" ", "\t")) for line in buffer if line.strip())
            body = "\n".join(buffer).strip("\n") if indented else normalize_space(" ".join(buffer))
            if body.strip():
                blocks.append(Block(text=body, section=section))
            buffer.clear()

    skip_next = False
    for index, line in enumerate(lines):
        if skip_next:
            skip_next = False
            continue
        next_line = lines[index + 1] if index + 1 < len(lines) else ""
        stripped = line.strip()
        if (
            stripped
            and not buffer
            and _UNDERLINE.match(next_line)
            and len(stripped) <= 100
            and abs(len(next_line.strip()) - len(stripped)) <= 3
        ):
            flush()
            section = normalize_space(stripped)
            title = title or section
            skip_next = True
            continue
        if not stripped:
            flush()
            continue
        buffer.append(line)
    flush()
    return title, blocks
