"""The question-form patterns are compiled in one module, ``tools/question_forms.py``, only."""

from __future__ import annotations

import re
from pathlib import Path

from tools import question_forms

REPO = Path(__file__).resolve().parent.parent
# the names the patterns had in the modules they came from, and their names here
OLD_NAMES = (
    "COMPUTED ARITHMETIC LIVE COMPLEX_HINTS EXTERNAL_HINTS EARLIER LATER MORE LESS ASKS_WHICH HOW_MUCH "
    "MORE_RECENTLY PLACE COMPARISON_FORM OPEN_WORDS ASKER TASK _RELATIVE_TIME _PATH _COMPUTED _WRITE".split()
)
PATTERNS = [name for name, value in vars(question_forms).items() if isinstance(value, re.Pattern)]


def test_no_other_module_compiles_a_question_form() -> None:
    names = "|".join(re.escape(name) for name in sorted(set(OLD_NAMES) | set(PATTERNS)))
    assignment = re.compile(rf"^({names})\s*=\s*re\.compile\(", re.MULTILINE)
    found = [
        f"{path.relative_to(REPO)}: {match.group(1)}"
        for room in ("agents", "tools", "core", "graph")
        for path in sorted((REPO / room).rglob("*.py"))
        if path.name != "question_forms.py"
        for match in assignment.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_copies_that_differ_are_kept_apart() -> None:
    assert question_forms.COMPUTED_DIFFERENCE.search("How many years apart were they born?")
    assert not question_forms.COMPUTED_INTENT.search("How many years apart were they born?")
    assert question_forms.LIVE.search("What is the weather in Oslo?")
    assert not question_forms.RELATIVE_TIME.search("What is the weather in Oslo?")
    assert question_forms.RELATIVE_TIME.search("What happened in the past 3 days?")
    assert not question_forms.LIVE.search("What happened in the past 3 days?")
