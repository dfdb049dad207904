"""The describing phrase of a question, marked by the model: where a chain's next hop comes from.

A small model asked to split "Who is the sibling of the actress who played Susan Walker in
Miracle on 34th Street?" often restates the whole question as its first step. Copying the question
with the innermost describing phrase in brackets is a much easier task for it ("Who is the
sibling of [the actress who played Susan Walker in Miracle on 34th Street]?"), and the code can
check the result: the phrase must be a verbatim part of the question that describes something
without naming it. The chain then asks for that phrase's name, writes the name back into the
question in its place, and marks the rewritten question again (a three-hop question has a phrase
inside a phrase), bounded by ``budgets.max_chain_hops``.
"""

from __future__ import annotations

import logging
import re

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from core.run import Run
from models.errors import MODEL_ERRORS, describe_model_error
from models.structured import decode_entities, message_text, strip_thinking
from prompts import render
from tools.catalog.tokens import STOPWORDS
from tools.question_forms import WH_PHRASE

log = logging.getLogger(__name__)

MARK_TOKENS = 96  # the question copied once, with brackets
BRACKETED = re.compile(r"\[([^\[\]]+)\]")
WORD = re.compile(r"[^\W_]+")
MAX_SHARE = 0.85  # a phrase with this share of the question's words is the question itself
MIN_DESCRIBING_LEN = 3  # "the actor who ..." has a lower-case content word this long; "de" does not


def mark_messages(question: str) -> list[BaseMessage]:
    """The marking conversation: instructions, worked examples as earlier turns, the question."""
    messages: list[BaseMessage] = [SystemMessage(content=render("hop_mark"))]
    for example in render("hop_mark_examples").strip().split("\n\n"):
        asked, _, marked = example.partition("\n")
        messages += [HumanMessage(content=asked), AIMessage(content=marked)]
    return [*messages, HumanMessage(content=question)]


def _words(text: str) -> list[str]:
    return WORD.findall(decode_entities(text))


def describes(phrase: str) -> bool:
    """Whether ``phrase`` describes rather than names: it has a lower-case content word ("the
    actress who played ...") where a name has none ("Thelma and Louise", "A Series of Unfortunate
    Events", "Alice de Lusignan")."""
    return any(
        word.islower() and len(word) >= MIN_DESCRIBING_LEN and word not in STOPWORDS
        for word in _words(phrase)
    )


def find_phrase(phrase: str, question: str) -> re.Match[str] | None:
    """Where ``phrase`` stands in ``question``, word for word (case, spacing and punctuation between
    words aside)."""
    words = _words(phrase)
    if not words:
        return None
    pattern = r"\W+".join(re.escape(word) for word in words)
    return re.search(rf"(?<!\w){pattern}(?!\w)", question, re.IGNORECASE)


def describing_phrase(reply: str, question: str) -> str | None:
    """The phrase the model bracketed, if it is a part of ``question`` that describes something
    without naming it and is not the whole question nor what it asks ("what sports organization");
    otherwise None."""
    marked = BRACKETED.search(strip_thinking(decode_entities(reply)))
    if not marked:
        return None
    found = find_phrase(marked.group(1), question)
    if not found:
        return None
    phrase = found.group(0)
    words = len(_words(phrase))
    if (
        words < 2
        or words > MAX_SHARE * len(_words(question))
        or not describes(phrase)
        or WH_PHRASE.match(phrase)
    ):
        return None
    return phrase


async def mark(run: Run, question: str) -> str | None:
    """The innermost describing phrase of ``question`` (None when it names everything, or when the
    model's call fails: the chain then goes on without it)."""
    model = run.model("master").bind(max_tokens=MARK_TOKENS, temperature=0)
    try:
        reply = await model.ainvoke(mark_messages(question))
    except MODEL_ERRORS as exc:
        log.warning("marking the question's describing phrase failed (%s)", describe_model_error(exc))
        return None
    return describing_phrase(message_text(reply), question)


def name_step(phrase: str) -> str:
    """The hop that asks for the name of what ``phrase`` describes."""
    return f"Who or what is {phrase}?"


def rest_step(question: str, phrase: str, ref: int) -> str:
    """``question`` with ``phrase`` replaced by the reference ``#ref`` to that hop's answer."""
    found = find_phrase(phrase, question)
    if not found:
        return question
    return f"{question[: found.start()]}#{ref}{question[found.end() :]}"
