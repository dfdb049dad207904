"""An answer that is only the date the prompt gave: today's date, which no source says.

The Writer's prompt says what day it is (a question may ask how old someone is). When the
sources do not give the date a question asks for ("On what date did the governor's term end?"),
the 1.5B often answers with today's date: the one date in its prompt. Such an answer is read off
the prompt, not the sources, unless a source (a clock tool's output, a dated page) or the
question says that date too.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from dateutil import parser as date_parser
from dateutil.parser import ParserError

ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
MAX_ANSWER_CHARS = 60  # a date, not a sentence
# two defaults that differ in every field: a value parsed the same under both named them all
_DEFAULTS = (datetime(2001, 1, 1), datetime(2002, 2, 2))


def today_of(today: str) -> date | None:
    """The date in the prompt's ``today`` line ("Friday, 2026-11-27 UTC"), if it holds one."""
    match = ISO_DATE.search(today)
    if not match:
        return None
    try:
        return date(*(int(part) for part in match.groups()))
    except ValueError:
        return None


def full_date(text: str) -> date | None:
    """The calendar date ``text`` states in full (day, month and year), or None."""
    if not text or len(text) > MAX_ANSWER_CHARS:
        return None
    try:
        first, second = (date_parser.parse(text, default=default, fuzzy=True) for default in _DEFAULTS)
    except (ParserError, ValueError, OverflowError):
        return None
    return first.date() if first.date() == second.date() else None


def spellings(day: date) -> list[str]:
    """The usual ways a text writes ``day``."""
    month, short = day.strftime("%B"), day.strftime("%b")
    return [
        day.isoformat(),
        f"{month} {day.day}, {day.year}",
        f"{day.day} {month} {day.year}",
        f"{short} {day.day}, {day.year}",
        f"{day.day} {short} {day.year}",
    ]


def borrows_today(short: str, today: str, said: str) -> bool:
    """Whether the answer ``short`` is today's date (from the prompt's ``today`` line) and the
    text ``said`` (the sources and the question) does not give that date."""
    now = today_of(today)
    if now is None or full_date(short) != now:
        return False
    lowered = said.lower()
    return not any(spelling.lower() in lowered for spelling in spellings(now))
