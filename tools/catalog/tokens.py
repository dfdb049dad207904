"""BM25 tokens for tool and server text: identifiers split (``camelCase``, ``snake_case``,
``kebab-case``), each CJK character a token, lower case, common English function words dropped."""

from __future__ import annotations

import re

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_TOKEN = re.compile(r"[\u4e00-\u9fff]|[A-Za-z0-9]+")
STOPWORDS = frozenset(
    "a an the and or of to in on for with by from at as is are be was were this that these those it its "
    "into about please i me my you your we our can could would should will shall do does did then also "
    "any all some which what when where who how if so than such via per each using use".split()
)


def tokenize(text: str) -> list[str]:
    """The BM25 tokens of ``text``."""
    return [
        tok for tok in (t.lower() for t in _TOKEN.findall(_CAMEL.sub(r"\1 \2", text))) if tok not in STOPWORDS
    ]
