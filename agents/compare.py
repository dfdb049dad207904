"""A comparison read one entity at a time, the comparison itself made in code (SRSA's parallel step).

A 1.5B reader handed five passages about two entities often answers with the wrong one, or
with the entity the passages mention most. Asked about one entity at a time it is more reliable
(HotpotQA dev, the 43 comparisons these rules read, over the question's top 5: 36 settled, 24 of
them exactly right where RAG got 18 of the same 36), and the comparison is then a rule:

* **earlier / later** ("Which came first, A or B?", "Who is younger, A or B?"): the date of each
  entity the question is about, compared as dates;
* **more / less** ("Which genus has more species, A or B?"): the number of each, compared as
  numbers;
* **choice** ("Which is a gun dog, A or B?"): whether each entity fits, and the one that does;
* **both** ("Were A and B both actors?"): whether each one fits; yes only when all do.

When the readings do not settle it (a date that cannot be read, two entities that both fit or
neither), there is no verdict and the Writer reads the question whole as before.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.constants import TAG_NOSTREAM

from agents.facets import answer_choices, comparison_facets, is_yes_no_question
from agents.short_answer import short_of
from core.state import Evidence
from models.structured import message_text, strip_thinking
from prompts import render
from tools.question_forms import ASKS_WHICH, EARLIER, HOW_MUCH, LATER, LESS, MORE, MORE_RECENTLY, PLACE

log = logging.getLogger(__name__)

Form = Literal["earlier", "later", "more", "less", "choice", "both"]
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
OPENING = re.compile(r"^(.{2,90}?)\s+(?:\(|is\b|was\b|are\b|were\b)")
HONORIFICS = re.compile(r"^((sir|dame|dr|prof|professor|mr|mrs|ms|lord|lady|saint|st)\.?\s+)+", re.IGNORECASE)
WORDS = re.compile(r"\w+")
MARKUP = re.compile(r"\s*[{\[<|=]")  # debris of wiki markup left in a corpus ("Tippett {'1': ", ...}")
MAX_NAME_WORDS = 8
MIN_NAME_SHARE = 0.5  # of an entity's words a text must hold to be about that entity
SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
YEAR = re.compile(r"\b(\d{3,4})\b")
DAY = re.compile(r"\b([0-3]?\d)(?:st|nd|rd|th)?\b")
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
FACT_TOKENS = 24  # a date, or yes/no
DATE_ASK = "the date for {entity} that the question compares (day, month and year as the context gives them)"
NUMBER_ASK = "the number for {entity} that the question compares"
ASK = {
    "earlier": DATE_ASK,
    "later": DATE_ASK,
    "more": NUMBER_ASK,
    "less": NUMBER_ASK,
    "choice": "yes or no",
    "both": "yes or no",
}


@dataclass(frozen=True)
class Comparison:
    """A comparison question's form and the entities it compares."""

    form: Form
    entities: list[str]


@dataclass(frozen=True)
class Verdict:
    """What each entity's reading found, and the answer they settle (None when they do not)."""

    form: Form
    facts: dict[str, str]
    answer: str | None


def comparison_of(question: str) -> Comparison | None:
    """The form of a comparison of two or three named entities, or None for any other question
    (and for one these rules cannot read safely: "further north", or both "older" and "younger")."""
    if HOW_MUCH.search(question):  # "older, and by how many years?" asks for a difference: the Planner's
        return None
    options = answer_choices(question)
    entities = options or comparison_facets(question)
    if not options and not (is_yes_no_question(question) or ASKS_WHICH.search(question)):
        return None  # "Which of X's older brothers plays for A and B?" compares nothing
    if not 2 <= len(entities) <= 3:
        return None
    if not options and is_yes_no_question(question):
        return Comparison("both", entities)
    plain = MORE_RECENTLY.sub("", question)  # "more recently" is a date, not a number
    earlier, later = bool(EARLIER.search(plain)), bool(LATER.search(plain))
    more, less = bool(MORE.search(plain)), bool(LESS.search(plain))
    if PLACE.search(plain) or earlier + later + more + less > 1:
        return None
    form: Form | None = (
        "earlier" if earlier else "later" if later else "more" if more else "less" if less else None
    )
    if form is None:  # "Which is a gun dog, A or B?" fits one; "What do A and B share?" compares nothing
        return Comparison("choice", options) if options else None
    return Comparison(form, entities)


def date_key(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) of a date as written ("4 May 1881", "May 1881", "1881"), or None.

    Month and day are 0 when the text does not give them; a date "BC" counts backwards.
    """
    lowered = text.lower()
    years = YEAR.findall(lowered)
    if not years:
        return None
    year = int(years[-1])
    if re.search(r"\b(bc|bce|b\.c\.)\b", lowered):
        year = -year
    month = next((i for i, name in enumerate(MONTHS, 1) if re.search(rf"\b{name[:3]}", lowered)), 0)
    rest = YEAR.sub(" ", lowered)
    day = next((int(d) for d in DAY.findall(rest) if 1 <= int(d) <= 31), 0) if month else 0
    return year, month, day


def name_share(entity: str, text: str) -> float:
    """The share of the entity's words that ``text`` holds (any case)."""
    words = {word.lower() for word in WORDS.findall(entity)}
    return len(words & {word.lower() for word in WORDS.findall(text)}) / max(len(words), 1)


def names(entity: str, source: Evidence, share: float = MIN_NAME_SHARE) -> bool:
    """Whether the source's title and text hold at least ``share`` of the entity's words (half by
    default; 1.0: the whole name)."""
    return name_share(entity, f"{source['title']} {source['content']}") >= share


def completed_date(fact: str, entity: str, sources: list[Evidence]) -> str:
    """A date read without its year completed from a source about the entity that writes it whole:
    asked for Ernst Messerschmid's date over "(born May 21, 1945)" the 1.5B answers "May 21", which
    no year settles; the source's "May 21, 1945" does. Only a source naming the entity counts: a
    "November 25" read for Shifty Shellshock is not completed from Thomas D. Singleton's
    "November 25, 1833". Any other reading is kept as read."""
    if not fact.strip() or date_key(fact) is not None:
        return fact
    written = re.compile(re.escape(fact.strip(" .,")) + r"(?:st|nd|rd|th)?,?\s+\d{3,4}\b", re.IGNORECASE)
    about = (source for source in sources if names(entity, source))
    whole = next((match.group() for source in about if (match := written.search(source["content"]))), None)
    return whole or fact


def number_of(text: str) -> float | None:
    """The first number in ``text`` ("1,200", "3.5 million"), or None."""
    match = NUMBER.search(text)
    if not match:
        return None
    value = float(match.group().replace(",", ""))
    scale = re.match(r"\s*(thousand|million|billion)", text[match.end() :], re.IGNORECASE)
    return value * SCALE[scale.group(1).lower()] if scale else value


def is_yes(text: str) -> bool | None:
    """True for a reply that says yes, False for no, None for anything else."""
    first = re.sub(r"[^a-z]", " ", text.lower()).split()[:1]
    return {"yes": True, "no": False}.get(first[0]) if first else None


def settle(comparison: Comparison, facts: dict[str, str]) -> str | None:
    """The answer the per-entity facts settle, or None when they leave it open."""
    if comparison.form in ("earlier", "later"):
        keys = {entity: date_key(fact) for entity, fact in facts.items()}
        dated: dict[str, tuple[int, ...]] = {entity: key for entity, key in keys.items() if key is not None}
        if len(dated) != len(keys):
            return None
        # compared at the precision every date has: "1966" against "24 September 1966" is a tie
        precision = min(1 if not key[1] else 2 if not key[2] else 3 for key in dated.values())
        dated = {entity: key[:precision] for entity, key in dated.items()}
        if len(set(dated.values())) != len(dated):
            return None
        pick = min if comparison.form == "earlier" else max
        return pick(dated, key=lambda entity: dated[entity])
    if comparison.form in ("more", "less"):
        numbers = {entity: number_of(fact) for entity, fact in facts.items()}
        counted = {entity: n for entity, n in numbers.items() if n is not None}
        if len(counted) != len(numbers) or len(set(counted.values())) != len(counted):
            return None
        pick = max if comparison.form == "more" else min
        return pick(counted, key=lambda entity: counted[entity])
    verdicts = {entity: is_yes(fact) for entity, fact in facts.items()}
    if comparison.form == "both":
        if any(v is False for v in verdicts.values()):
            return "no"
        return "yes" if all(verdicts.values()) else None
    fitting = [entity for entity, verdict in verdicts.items() if verdict]
    return fitting[0] if len(fitting) == 1 else None


def cited_facts(verdict: Verdict, sources: list[Evidence]) -> str | None:
    """The reasons of a comparison settled on dates or numbers, written from the facts themselves:
    each entity's reading cited to the source that writes it ("Wavves: 2008 [1]. Social Code: 2001
    [3].").

    None for yes/no readings (a bare "yes" explains nothing: ``agents/quote.py`` quotes what each
    entity's article says instead), an open comparison, or a reading no source about its entity
    writes: the Writer then explains in its own words.
    """
    if verdict.answer is None or verdict.form not in ("earlier", "later", "more", "less"):
        return None
    cited = []
    for entity, fact in verdict.facts.items():
        number = source_writing(fact, entity, sources)
        if number is None:
            return None
        cited.append(f"{entity}: {fact} [{number}].")
    return " ".join(cited)


def source_writing(fact: str, entity: str, sources: list[Evidence]) -> int | None:
    """The number (from 1) of the source about ``entity`` that writes ``fact``: its own article
    first, then any source naming it. A reading with numbers is written where every one of its
    numbers is ("September 1, 2009" in "released on September 1, 2009"; not in the band's article
    that says "formed in 1999"), any other where its words are. None when no such source writes it."""
    wanted = {n.replace(",", "") for n in NUMBER.findall(fact)}
    phrase = " ".join(fact.lower().split())

    def writes(source: Evidence) -> bool:
        if wanted:
            return wanted <= {n.replace(",", "") for n in NUMBER.findall(source["content"])}
        return bool(phrase) and phrase in " ".join(source["content"].lower().split())

    about = sorted(range(len(sources)), key=lambda i: not _titled(entity, sources[i]))
    return next((i + 1 for i in about if names(entity, sources[i]) and writes(sources[i])), None)


def article_number(entity: str, sources: Sequence[Evidence]) -> int | None:
    """The number (from 1) of the first source that is the entity's own article, or None."""
    return next((n for n, source in enumerate(sources, 1) if _titled(entity, source)), None)


def full_name(entity: str, sources: list[Evidence]) -> str:
    """The entity's name as its own article opens ("Berkeley" → "University of California,
    Berkeley"; "Ernst Messerschmid" → "Ernst Willi Messerschmid"), or the name as asked.

    Only a short opening that holds every word of the name (an initial stands for a word) counts,
    before " (" or " is"/" was"; titles ("Sir", "Dr."), letters after the name ("OM CBE") and a
    trailing clause (", also Labrador", ", 377 U.S. 533") and markup debris are left out.
    """
    own = [source for source in sources if _titled(entity, source)]
    opening = OPENING.match(" ".join(own[0]["content"].split())) if own else None
    if opening is None:
        return entity
    name = MARKUP.split(opening.group(1))[0]
    name = re.split(r",\s+(?=[^A-Z\s])", name)[0]
    name = HONORIFICS.sub("", name)
    name = re.sub(r"(\s+[A-Z]{2,4})+$", "", name).strip(" ,")
    words = [word.lower() for word in WORDS.findall(name)]
    asked = [word.lower() for word in WORDS.findall(entity)]
    held = all(word in words or (len(word) == 1 and any(w.startswith(word) for w in words)) for word in asked)
    return name if held and len(name.split()) <= MAX_NAME_WORDS else entity


def _titled(entity: str, source: Evidence) -> bool:
    """Whether the source is the entity's own article (either name inside the other)."""
    name, title = entity.lower(), source["title"].lower()
    return bool(title) and (title in name or name in title)


def sources_about(entity: str, sources: list[Evidence]) -> list[Evidence]:
    """The sources titled after ``entity`` (either name inside the other), else all of them."""
    return [source for source in sources if _titled(entity, source)] or sources


def entity_question(comparison: Comparison, question: str, entity: str) -> str:
    """The question asked about one entity.

    A yes/no question about all of them is asked of each ("Were A and B both actors?" → "Were A
    actors?"), and a choice becomes a check ("Which is a gun dog, A or B?" → "Which is a gun dog?
    Is it A?"): asked the whole question over one entity's passages, a small model answers "no"
    for the entity it cannot see. A date or a number is asked with the whole question.
    """
    if comparison.form not in ("both", "choice"):
        return question
    lowered = question.lower()
    starts = [lowered.find(e.lower()) for e in comparison.entities]
    if min(starts) < 0:
        return question
    begin = min(starts)
    end = max(start + len(e) for start, e in zip(starts, comparison.entities, strict=True))
    before, after = question[:begin], question[end:]
    before = re.sub(r"\b(the|a|an)\s*$", "", before, flags=re.IGNORECASE)
    if comparison.form == "both":
        plain = f"{before}{entity}{after}"
        return " ".join(re.sub(r"\b(both|either)\s+", "", plain, flags=re.IGNORECASE).split())
    head = re.sub(r"\s*,\s*,\s*", " ", " ".join(f"{before} {after}".split())).strip(" ,:;?")
    return f"{head}? Is it {entity}?"


def entity_prompt(comparison: Comparison, question: str, entity: str, sources: list[Evidence]) -> str:
    """The prompt that asks about one entity, over its own sources."""
    context = "\n\n".join(f"[{n}] {s['title']}: {s['content'][:1500]}" for n, s in enumerate(sources, 1))
    ask = ASK[comparison.form].format(entity=entity)
    query = entity_question(comparison, question, entity)
    return render("compare_entity", sources=context, query=query, entity=entity, ask=ask)


async def read_each(
    model: BaseChatModel, comparison: Comparison, question: str, sources: list[Evidence]
) -> Verdict:
    """Ask about every entity on its own sources (those titled after it, else all), then settle the
    comparison in code; an entity answered is named as its own article opens.

    Raises:
        The model errors of any reading (:data:`models.errors.MODEL_ERRORS`).
    """
    by_entity = {entity: sources_about(entity, sources) for entity in comparison.entities}
    verdict = await read_entities(model, comparison, question, by_entity)
    if verdict.answer in comparison.entities:
        return Verdict(verdict.form, verdict.facts, full_name(verdict.answer, sources))
    return verdict


async def read_entities(
    model: BaseChatModel, comparison: Comparison, question: str, by_entity: dict[str, list[Evidence]]
) -> Verdict:
    """Ask about every entity over the sources given for it, then settle the comparison in code.

    Raises:
        The model errors of any reading (:data:`models.errors.MODEL_ERRORS`).
    """
    # not streamed: a reader sees the settled answer and its reasons, not each entity's reading
    bound = model.bind(max_tokens=FACT_TOKENS, temperature=0).with_config(tags=[TAG_NOSTREAM])
    system = SystemMessage(content=render("reader_system"))

    async def read(entity: str) -> str:
        prompt = entity_prompt(comparison, question, entity, by_entity[entity])
        reply = await bound.ainvoke([system, HumanMessage(content=prompt)])
        fact = short_of(strip_thinking(message_text(reply)))
        return (
            completed_date(fact, entity, by_entity[entity])
            if comparison.form in ("earlier", "later")
            else fact
        )

    found = await asyncio.gather(*(read(entity) for entity in comparison.entities))
    facts = dict(zip(comparison.entities, found, strict=True))
    answer = settle(comparison, facts)
    log.info("compared %s (%s): %s -> %r", comparison.entities, comparison.form, facts, answer)
    return Verdict(form=comparison.form, facts=facts, answer=answer)
