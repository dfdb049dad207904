"""Links between passages: which indexed documents a text names by their title.

An encyclopedia-like collection has one document per person, place, work or organisation, and a
passage that names one of them links to it, hyperlink or not. Following those links is the second
hop of a bridge question without asking a model what to search next: the question names the film,
the film's passage names its director, the director's passage holds the answer (the hyperlink
walk HotpotQA was built from, and the one multi-hop retrievers follow).

A title matches where it stands as whole words, case-sensitively (``Paris`` but not ``paris`` or
``Parisian``), without a trailing disambiguation (``Queen of Blood (film)`` is named as ``Queen of
Blood``). Lookup is by word n-grams, so its cost grows with the text, not with the number of titles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MIN_TITLE_CHARS = 4  # shorter titles ("Up", "It") match ordinary words
MAX_TITLE_WORDS = 8
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")
_WORD = re.compile(r"\w+(?:[-'’.]\w+)*|[^\w\s]")


def title_key(title: str) -> str:
    """The words a text names a document by: its title without a trailing ``(…)``."""
    return " ".join(_DISAMBIGUATION.sub("", title).split())


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


@dataclass(frozen=True)
class Document:
    """One linkable document: its title and the id of its first passage (the lead)."""

    title: str
    lead_id: str


class TitleLinks:
    """The titles of one collection, to find which of its documents a text names."""

    def __init__(self, passages: Iterable[tuple[str, str, int]]) -> None:
        """Index ``(passage id, title, position)`` triples; a title links to its first passage."""
        leads: dict[str, tuple[int, str, str]] = {}
        for passage_id, title, position in passages:
            key = title_key(title)
            if len(key) < MIN_TITLE_CHARS or len(key.split()) > MAX_TITLE_WORDS:
                continue
            best = leads.get(" ".join(_words(key)))
            if best is None or (position, title) < (best[0], best[2]):
                leads[" ".join(_words(key))] = (position, passage_id, title)
        self._documents = {key: Document(title, pid) for key, (_, pid, title) in leads.items()}
        self._longest = max((len(key.split()) for key in self._documents), default=0)

    def __len__(self) -> int:
        return len(self._documents)

    def mentioned(self, text: str) -> list[Document]:
        """The documents ``text`` names, in order of first mention (longest match at each word)."""
        words = _words(text)
        found: list[Document] = []
        start = 0
        while start < len(words):
            for size in range(min(self._longest, len(words) - start), 0, -1):
                document = self._documents.get(" ".join(words[start : start + size]))
                if document is not None:
                    if document not in found:
                        found.append(document)
                    start += size
                    break
            else:
                start += 1
        return found


def linked_documents(links: TitleLinks, texts: Sequence[str], own_titles: Iterable[str]) -> list[Document]:
    """The documents ``texts`` name, in order (text by text), except those titled ``own_titles``."""
    own = {title_key(title) for title in own_titles}
    found: list[Document] = []
    for text in texts:
        for document in links.mentioned(text):
            if title_key(document.title) not in own and document not in found:
                found.append(document)
    return found
