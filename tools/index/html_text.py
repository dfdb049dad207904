"""Plain text out of HTML with the standard library: title, section headings and paragraph blocks."""

from __future__ import annotations

from html.parser import HTMLParser

from tools.index.documents import Block, normalize_space

_SKIP = {"script", "style", "noscript", "template", "svg", "nav", "footer", "header", "aside", "form"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_BLOCKS = {
    "p", "div", "li", "ul", "ol", "dl", "dt", "dd", "pre", "blockquote", "table", "tr", "td", "th",
    "section", "article", "main", "br", "hr", "figure", "figcaption", "body", "details", "summary",
}  # fmt: skip


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.first_h1 = ""
        self.blocks: list[Block] = []
        self._section = ""
        self._buffer: list[str] = []
        self._skip_depth = 0
        self._in_title = False
        self._heading: str | None = None
        self._pre_depth = 0

    def _flush(self) -> None:
        text = "".join(self._buffer)
        self._buffer = []
        text = text.strip("\n") if self._pre_depth else normalize_space(text)
        if text.strip():
            self.blocks.append(Block(text=text, section=self._section))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip_depth += 1
        elif tag == "title":
            self._in_title = True
        elif tag in _HEADINGS:
            self._flush()
            self._heading = tag
        elif tag in _BLOCKS:
            self._flush()
            if tag == "pre":
                self._pre_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in _HEADINGS and self._heading:
            heading = normalize_space("".join(self._buffer))
            self._buffer = []
            if heading:
                self._section = heading
                if tag == "h1" and not self.first_h1:
                    self.first_h1 = heading
            self._heading = None
        elif tag in _BLOCKS:
            self._flush()
            if tag == "pre":
                self._pre_depth = max(0, self._pre_depth - 1)

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        if self._in_title:
            self.title += data
            return
        self._buffer.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def html_to_blocks(html: str) -> tuple[str, list[Block]]:
    """Parse HTML into ``(title, blocks)``; the title is ``<title>`` or the first ``<h1>`` ("" if none)."""
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    title = normalize_space(parser.title) or parser.first_h1
    return title, parser.blocks
