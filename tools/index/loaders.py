"""Read files into :class:`Document` objects: Markdown, plain text / reST, HTML, JSONL and PDF."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from tools.index.documents import Block, Document, normalize_space
from tools.index.html_text import html_to_blocks
from tools.index.jsonfiles import json_objects

if TYPE_CHECKING:
    from pypdf import PdfReader

log = logging.getLogger(__name__)

MARKDOWN = {".md", ".markdown", ".mdx"}
TEXT = {".txt", ".text", ".rst"}
HTML = {".html", ".htm", ".xhtml"}
JSONL = {".jsonl", ".ndjson"}
PDF = {".pdf"}
SUPPORTED = MARKDOWN | TEXT | HTML | JSONL | PDF
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}

_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-~^*+#\"'`])\1{2,}\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_FRONT_TITLE = re.compile(r"^title:\s*(.+?)\s*$", re.MULTILINE)
_LINE_BREAK_HYPHEN = re.compile(r"(?<=[a-z])-\n(?=[a-z])")


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

    Raises:
        ValueError: When a PDF is encrypted, corrupt or pypdf is missing (the message names the file).
    """
    suffix = path.suffix.lower()
    if suffix in PDF:
        return [pdf_document(path)]
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
    for number, record in json_objects(raw, source):
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


def pdf_document(path: Path) -> Document:
    """Read a PDF's text with pypdf into one document, one block per paragraph, sectioned by page.

    Each block's section is ``"page N"``, so passages keep their place in the file. The title is the
    metadata title, else the first non-empty line of page 1, else the file stem.

    Raises:
        ValueError: When the PDF is encrypted (and not openable with an empty password), corrupt,
            or pypdf is not installed. The message names the file.
    """
    reader = _pdf_reader(path)
    try:  # pypdf raises many exception types on malformed input; report them all as a bad file
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = reader.metadata.title if reader.metadata else None
    except Exception as exc:
        raise ValueError(f"{path}: cannot read PDF ({type(exc).__name__}: {exc})") from exc
    blocks = pdf_blocks(pages)
    if not blocks:
        log.warning("%s: no text found in the PDF (scanned images?)", path)
    title = normalize_space(str(meta_title or "")) or _first_line(pages[0] if pages else "") or path.stem
    return Document(title=title, source=str(path), blocks=blocks, kind="pdf")


def _pdf_reader(path: Path) -> PdfReader:
    """Open ``path`` with pypdf from its bytes; decrypt it with the empty password if needed.

    Raises:
        ValueError: When pypdf is missing, the file is not a readable PDF, or it is encrypted.
    """
    try:
        from pypdf import PdfReader
    except ImportError as exc:
        raise ValueError(f"{path}: reading PDFs needs pypdf (pip install 'pypdf>=5')") from exc
    data = path.read_bytes()
    try:  # pypdf raises many exception types on malformed input; report them all as a bad file
        reader = PdfReader(io.BytesIO(data), strict=False)
        opened = not reader.is_encrypted or bool(reader.decrypt(""))
    except Exception as exc:
        raise ValueError(f"{path}: not a readable PDF ({type(exc).__name__}: {exc})") from exc
    if not opened:
        raise ValueError(f"{path}: the PDF is encrypted with a password")
    return reader


def pdf_blocks(pages: Iterable[str]) -> list[Block]:
    """Blocks of the pages' paragraphs (blank-line separated), with section ``"page N"``.

    Words hyphenated across a line break are joined again.
    """
    blocks: list[Block] = []
    for number, text in enumerate(pages, start=1):
        text = _LINE_BREAK_HYPHEN.sub("", text)
        blocks.extend(Block(text=part, section=f"page {number}") for part in _paragraphs(text))
    return blocks


def _first_line(text: str) -> str:
    """The first non-empty line of ``text``, whitespace-normalised ("" if none)."""
    return next((normalize_space(line) for line in text.splitlines() if line.strip()), "")


def _paragraphs(text: str) -> list[str]:
    return [normalize_space(part) for part in re.split(r"\n\s*\n", text) if part.strip()]


def markdown_blocks(text: str) -> tuple[str, list[Block]]:
    """Split Markdown into ``(title, blocks)``: headings become sections, code fences stay whole.

    The title is the front-matter ``title:``, else the first level-1 heading ("" if none).
    """
    title, lines = _front_matter(text.splitlines())
    blocks: list[Block] = []
    buffer: list[str] = []
    section, fence = "", ""

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
