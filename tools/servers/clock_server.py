"""MCP server "clock": current time, time-zone conversion and date arithmetic.

Run alone with ``python -m tools.servers.clock_server`` (stdio) or
``python -m tools.servers.clock_server --transport streamable-http --port 8102`` (HTTP on loopback).
The current time can be pinned with ``AISEARCH_CLOCK_NOW`` (e.g. ``2026-11-22T09:00:00+00:00``).

Kept in one file (over 300 lines): an MCP server is one process, and its tools (now, conversion,
date arithmetic) share the time-zone and date parsing.
"""

from __future__ import annotations

import calendar
import logging
import re
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from mcp.server.fastmcp import FastMCP
from pydantic import Field

from tools.servers.common import OPEN_WORLD, serve, server_arg_parser
from tools.settings import server_settings

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8102

mcp = FastMCP(
    "clock",
    instructions="Current date and time in any time zone, time-zone conversion, and calendar "
    "arithmetic (dates before/after a date, days between two dates).",
)

_ALIASES = {
    "utc": "UTC", "gmt": "UTC", "z": "UTC", "zulu": "UTC", "universal": "UTC",
    "japan": "Asia/Tokyo", "jst": "Asia/Tokyo",
    "beijing": "Asia/Shanghai", "china": "Asia/Shanghai", "peking": "Asia/Shanghai",
    "shenzhen": "Asia/Shanghai", "guangzhou": "Asia/Shanghai", "hangzhou": "Asia/Shanghai",
    "india": "Asia/Kolkata", "ist": "Asia/Kolkata", "delhi": "Asia/Kolkata", "new delhi": "Asia/Kolkata",
    "mumbai": "Asia/Kolkata", "bangalore": "Asia/Kolkata", "bengaluru": "Asia/Kolkata",
    "new york": "America/New_York", "nyc": "America/New_York", "washington": "America/New_York",
    "washington dc": "America/New_York", "boston": "America/New_York", "miami": "America/New_York",
    "eastern": "America/New_York", "est": "America/New_York", "edt": "America/New_York",
    "et": "America/New_York", "central": "America/Chicago", "mountain": "America/Denver",
    "pacific": "America/Los_Angeles", "pst": "America/Los_Angeles", "pdt": "America/Los_Angeles",
    "pt": "America/Los_Angeles", "la": "America/Los_Angeles", "san francisco": "America/Los_Angeles",
    "seattle": "America/Los_Angeles", "silicon valley": "America/Los_Angeles",
    "uk": "Europe/London", "england": "Europe/London", "britain": "Europe/London",
    "united kingdom": "Europe/London", "bst": "Europe/London",
    "france": "Europe/Paris", "cet": "Europe/Paris", "germany": "Europe/Berlin",
    "italy": "Europe/Rome", "spain": "Europe/Madrid", "netherlands": "Europe/Amsterdam",
    "russia": "Europe/Moscow", "korea": "Asia/Seoul", "south korea": "Asia/Seoul",
    "taiwan": "Asia/Taipei", "vietnam": "Asia/Ho_Chi_Minh", "hanoi": "Asia/Ho_Chi_Minh",
    "thailand": "Asia/Bangkok", "indonesia": "Asia/Jakarta", "philippines": "Asia/Manila",
    "uae": "Asia/Dubai", "abu dhabi": "Asia/Dubai", "israel": "Asia/Jerusalem", "turkey": "Europe/Istanbul",
    "egypt": "Africa/Cairo", "nigeria": "Africa/Lagos", "kenya": "Africa/Nairobi",
    "south africa": "Africa/Johannesburg", "australia": "Australia/Sydney", "aest": "Australia/Sydney",
    "new zealand": "Pacific/Auckland", "hawaii": "Pacific/Honolulu", "canada": "America/Toronto",
    "brazil": "America/Sao_Paulo", "mexico": "America/Mexico_City", "argentina": "America/Argentina/Buenos_Aires",
    "buenos aires": "America/Argentina/Buenos_Aires",
}  # fmt: skip
_OFFSET = re.compile(r"^(?:utc|gmt)?\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?$")
_TZ_HELP = (
    "name a time zone by IANA name ('Asia/Tokyo', 'America/New_York', 'UTC'), by a city or country "
    "('Tokyo', 'Beijing', 'New York', 'London', 'India'), or by a UTC offset ('UTC+8', 'UTC-05:30')"
)
# the last three read a month or a year alone as its first day ("1966" is 1966-01-01): the result
# names the dates it used, so a difference in whole years reads right and the assumption shows
_DATE_FORMATS = (
    "%B %d, %Y",
    "%b %d, %Y",
    "%B %d %Y",
    "%b %d %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%Y/%m/%d",
    "%B %Y",
    "%b %Y",
    "%Y",
)
_TIME_FORMATS = ("%H:%M", "%H:%M:%S", "%I%p", "%I:%M%p", "%I %p", "%I:%M %p")


@lru_cache(maxsize=1)
def _zones_by_city() -> dict[str, str]:
    zones: dict[str, str] = {}
    for key in sorted(available_timezones()):
        if key.startswith(("Etc/", "SystemV/", "posix/", "right/")):
            continue
        zones.setdefault(key.lower(), key)
        zones.setdefault(key.rsplit("/", 1)[-1].lower(), key)
    return zones


def resolve_timezone(name: str) -> tuple[tzinfo, str]:
    """Turn a time-zone name, city, country or UTC offset into a tzinfo and a display name.

    Args:
        name: e.g. "Asia/Tokyo", "Tokyo", "beijing", "New York", "India", "UTC+8".

    Raises:
        ValueError: When the name is not recognised; the message explains how to name a zone.
    """
    text = " ".join((name or "UTC").strip().split())
    key = text.lower()
    if match := _OFFSET.match(key):
        sign, hours, minutes = match.group(1), int(match.group(2)), int(match.group(3) or 0)
        if hours > 14 or minutes >= 60:
            raise ValueError(f"invalid UTC offset {name!r}; {_TZ_HELP}")
        delta = timedelta(hours=hours, minutes=minutes) * (-1 if sign == "-" else 1)
        return timezone(delta), f"UTC{_format_offset(delta)}"
    zone = _ALIASES.get(key) or _zones_by_city().get(key) or _zones_by_city().get(key.replace(" ", "_"))
    if zone is None:
        raise ValueError(f"unknown time zone {name!r}; {_TZ_HELP}")
    try:
        return ZoneInfo(zone), zone
    except ZoneInfoNotFoundError:
        raise ValueError(f"time zone {zone!r} is not available on this system; {_TZ_HELP}") from None


def _format_offset(delta: timedelta | None) -> str:
    total = int((delta or timedelta()).total_seconds() // 60)
    sign = "-" if total < 0 else "+"
    return f"{sign}{abs(total) // 60:02d}:{abs(total) % 60:02d}"


def current_time() -> datetime:
    """Return the current time in UTC, or the time pinned by ``AISEARCH_CLOCK_NOW``."""
    moment = server_settings().clock_now
    if moment is None:
        return datetime.now(UTC)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _describe(moment: datetime, zone_name: str) -> str:
    moment = moment.replace(microsecond=0)
    abbreviation = moment.tzname() or ""
    offset = f"UTC{_format_offset(moment.utcoffset())}"
    label = f"{abbreviation}, {offset}" if abbreviation and abbreviation != offset else offset
    return f"{moment.isoformat()} ({moment.strftime('%A')}) in {zone_name} ({label})"


_LEADING_ISO_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})\b")
# What a date argument can be, in the tools' schemas: a written date has digits, else it is a
# relative word. A caller (the Planner) sees that a title or a name is no date before calling; a
# call that gets one anyway is answered by parse_date's error, which says what a date looks like.
DateText = Annotated[
    str, Field(json_schema_extra={"pattern": r"^(.*[0-9].*|[Tt]oday|[Tt]omorrow|[Yy]esterday|[Nn]ow)$"})
]


def parse_date(text: str) -> date:
    """Read a date: ISO ("2026-11-22", also with a time), "today", "tomorrow", "yesterday", "November 22,
    2026", or a month or a year alone ("May 1945", "1966": its first day).

    Args:
        text: The date as written; relative words are taken in UTC.

    Raises:
        ValueError: When the text is not a recognised date.
    """
    key = " ".join(text.strip().lower().split())
    today = current_time().date()
    relative = {"today": 0, "now": 0, "tomorrow": 1, "yesterday": -1}
    if key in relative:
        return today + timedelta(days=relative[key])
    try:
        return datetime.fromisoformat(key.upper().replace("/", "-")).date()
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt).date()
        except ValueError:
            continue
    leading = _LEADING_ISO_DATE.match(key)  # "2026-11-22 09:24 UTC", "2026-11-22, Sunday"
    if leading:
        return date.fromisoformat(leading.group(1))
    raise ValueError(
        f"could not read the date {text!r}: use ISO format YYYY-MM-DD (years 1-9999), a year "
        "alone, or 'today', 'tomorrow', 'yesterday'"
    )


def _parse_moment(text: str, zone: tzinfo) -> datetime:
    key = " ".join(text.strip().split())
    if key.lower() in ("now", ""):
        return current_time().astimezone(zone)
    moment: datetime | None
    try:
        moment = datetime.fromisoformat(key.upper().replace("/", "-"))
    except ValueError:
        moment = None
        today = current_time().astimezone(zone).date()
        for fmt in _TIME_FORMATS:
            try:
                clock = datetime.strptime(key.upper().replace(".", ""), fmt).time()
            except ValueError:
                continue
            moment = datetime.combine(today, clock)
            break
        if moment is None:
            raise ValueError(
                f"could not read the time {text!r}: use 'HH:MM', '3:30 pm', an ISO date-time such as "
                "'2026-11-22T09:00', or 'now'"
            ) from None
    return moment.replace(tzinfo=zone) if moment.tzinfo is None else moment


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    if not 1 <= year <= 9999:
        raise ValueError("the resulting date is outside the supported years 1-9999")
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _plural(count: int, unit: str) -> str:
    return f"{count} {unit}{'' if abs(count) == 1 else 's'}"


@mcp.tool(annotations=OPEN_WORLD)
def now(timezone: str = "UTC") -> str:
    """Current date and time: the ISO date-time, weekday, time zone and UTC offset right now.

    Use it for questions about the present moment or about "today": what time or date it is,
    which weekday it is, what the current year is, somewhere in the world.
    The time zone may be an IANA name ("Asia/Tokyo"), a city or country ("Tokyo", "Beijing",
    "New York", "London", "Paris", "India"), or a UTC offset ("UTC+8").

    Example questions: "What time is it in Tokyo now?", "What is today's date?",
    "What day of the week is it in New York?", "What year is it?".

    Args:
        timezone: Where to tell the time; defaults to UTC.
    """
    zone, zone_name = resolve_timezone(timezone)
    return _describe(current_time().astimezone(zone), zone_name)


@mcp.tool(annotations=OPEN_WORLD)
def convert_time(time: str, from_timezone: str, to_timezone: str) -> str:
    """Convert a clock time or date-time from one time zone to another.

    The time may be "HH:MM" or "3:30 pm" (taken as today in the source zone), an ISO date-time
    such as "2026-11-22T09:00", or "now". Time zones may be IANA names, cities, countries or UTC
    offsets ("Asia/Shanghai", "Beijing", "London", "India", "UTC-5").

    Example questions: "What time is it in London when it is 9:00 in New York?",
    "Convert 2026-11-22 15:30 Beijing time to Paris time.",
    "If a meeting is at 10am in San Francisco, what time is it in Tokyo?".

    Args:
        time: The time to convert, in the source time zone.
        from_timezone: The source time zone.
        to_timezone: The target time zone.
    """
    source, source_name = resolve_timezone(from_timezone)
    target, target_name = resolve_timezone(to_timezone)
    moment = _parse_moment(time, source)
    converted = moment.astimezone(target)
    shift = (converted.utcoffset() or timedelta()) - (moment.utcoffset() or timedelta())
    hours = shift.total_seconds() / 3600
    return (
        f"{_describe(moment, source_name)} = {_describe(converted, target_name)}; "
        f"{target_name} is {'+' if hours >= 0 else '-'}{abs(hours):g} h from {source_name}"
    )


@mcp.tool(annotations=OPEN_WORLD)
def shift_date(date: DateText, days: int = 0, weeks: int = 0, months: int = 0, years: int = 0) -> str:
    """Date arithmetic: the date that is some days, weeks, months or years after (or before) a date.

    Use negative numbers to go back in time. Months and years are added first, on the calendar
    (Jan 31 + 1 month = Feb 28 or 29), then weeks and days. The date may be ISO ("2026-11-22"),
    "today", "tomorrow" or "yesterday" (in UTC). Returns the new date and its weekday.

    Example questions: "What date is 30 days after 2026-11-22?", "What was the date 6 weeks ago?",
    "What is the date 3 months from today?", "Which weekday is 100 days after 2026-01-01?".

    Args:
        date: The starting date.
        days: Days to add (negative to subtract).
        weeks: Weeks to add (negative to subtract).
        months: Calendar months to add (negative to subtract).
        years: Calendar years to add (negative to subtract).
    """
    start = parse_date(date)
    try:
        result = _add_months(start, 12 * years + months) + timedelta(days=days, weeks=weeks)
    except OverflowError:
        raise ValueError("the resulting date is outside the supported years 1-9999") from None
    parts = [
        _plural(v, u) for v, u in ((years, "year"), (months, "month"), (weeks, "week"), (days, "day")) if v
    ]
    change = " ".join(f"{'-' if p.startswith('-') else '+'} {p.lstrip('-')}" for p in parts) or "+ 0 days"
    return f"{start.isoformat()} ({start:%A}) {change} = {result.isoformat()} ({result:%A})"


@mcp.tool(annotations=OPEN_WORLD)
def date_diff(start: DateText, end: DateText) -> str:
    """Days between two dates, with a years/months/days breakdown and the weekdays.

    Dates may be ISO ("2026-11-22"), "today", "tomorrow" or "yesterday" (in UTC); times of day
    are ignored. The result is negative when the end is before the start.

    Example questions: "How many days between 2026-01-01 and 2026-11-22?",
    "How long ago was 1969-07-20?" (start 1969-07-20, end today),
    "How many days until Christmas 2026?" (start today, end 2026-12-25), "How old is someone born on 1990-05-17?".

    Args:
        start: The first date.
        end: The second date.
    """
    first, second = parse_date(start), parse_date(end)
    days = (second - first).days
    low, high = sorted((first, second))
    months = (high.year - low.year) * 12 + high.month - low.month
    if _add_months(low, months) > high:
        months -= 1
    rest = (high - _add_months(low, months)).days
    breakdown = f"{_plural(months // 12, 'year')}, {_plural(months % 12, 'month')}, {_plural(rest, 'day')}"
    weeks = f"{_plural(abs(days) // 7, 'week')} and {_plural(abs(days) % 7, 'day')}"
    note = "; the end is before the start" if days < 0 else ""
    return (  # the days first: a small reader answers "how many days" with the first quantity it reads
        f"{_plural(days, 'day')} from {first.isoformat()} ({first:%A}) to {second.isoformat()} ({second:%A})"
        f"{note}; that is {weeks}, or {breakdown}"
    )


def main(argv: list[str] | None = None) -> None:
    """Run the "clock" MCP server over stdio (default) or streamable HTTP.

    Args:
        argv: Command-line arguments (defaults to ``sys.argv[1:]``).
    """
    parser = server_arg_parser("MCP server 'clock': now, convert_time, shift_date, date_diff.", DEFAULT_PORT)
    args = parser.parse_args(argv)
    logging.getLogger().setLevel(args.log_level)
    serve(mcp, args)


if __name__ == "__main__":
    main()
