"""Reading a hop: the few words a hop's passages give as the answer to its question.

The hop reader (the ``reader`` role: the Writer's model unless configured) sees the hop's
passages, each cut to the sentences that matter (``agents/focus.py``), and answers with a name,
a place, a date or a number. An answer that does not stand is asked for again in a second turn
of the same conversation (the server reuses the prefix): one whose words are not in the
passages, to be copied from them; one that only repeats what the questions name, for the other
name the passages give.
"""

from __future__ import annotations

import logging

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from agents.chain_answer import UNKNOWN, clean_hop_answer, grounded, holds
from agents.focus import focus_passages, terms
from core.run import Run
from core.state import Evidence
from models.structured import decode_entities, message_text, strip_thinking
from prompts import render

log = logging.getLogger(__name__)

ANSWER_TOKENS = 24  # a hop's answer: a name, a place, a date or a number
HOP_CHARS = 700  # what a hop reads: about 175 tokens, under a quarter of what single-shot RAG reads


def hop_sources(passages: list[Evidence], question: str) -> str:
    """The numbered passages a hop reads, each cut to the sentences that matter for its question."""
    texts = focus_passages([item["content"] for item in passages], [question], HOP_CHARS)
    return "\n\n".join(
        f"[{n}] {item['title']}: {text}"
        for n, (item, text) in enumerate(zip(passages, texts, strict=True), 1)
    )


def first_turns(sources: str, question: str) -> list[BaseMessage]:
    """What a hop's reader is asked first: ``question`` over ``sources`` (:func:`hop_sources`)."""
    return [
        SystemMessage(content=render("reader_system")),
        HumanMessage(content=render("hop_read", sources=sources, question=question)),
    ]


def clean_reply(reply: BaseMessage) -> str:
    """A reader's reply as a hop answer (``UNKNOWN`` when it says the passages do not tell)."""
    return clean_hop_answer(strip_thinking(decode_entities(message_text(reply))))


async def read_hop(
    run: Run,
    question: str,
    passages: list[Evidence],
    asked: tuple[str, ...] = (),
    subject: tuple[str, str] = ("", ""),
) -> str:
    """A hop's answer in a few words, or ``UNKNOWN`` when its passages do not say.

    An answer that does not stand (:func:`reread`: not in the passages, or only what ``question``
    or the questions ``asked`` name, or, for a hop about ``subject`` (an earlier hop's answer), said
    only by passages that do not name it; ``subject`` is that answer and the hop's question without
    it) is asked for once more; still not standing, it is unknown.

    Raises:
        The model errors of the call (:data:`models.errors.MODEL_ERRORS`).
    """
    if not passages:
        return UNKNOWN
    sources = hop_sources(passages, question)
    questions = [question, *asked]
    model = run.model("reader").bind(max_tokens=ANSWER_TOKENS, temperature=0)
    turns = first_turns(sources, question)
    reply = await model.ainvoke(turns)
    answer = clean_reply(reply)
    follow_up = reread(answer, sources, questions) or off_subject(answer, passages, *subject)
    if follow_up is None:
        return answer
    log.info("hop answer %r does not stand: asked again", answer)
    turns += [AIMessage(content=message_text(reply)), HumanMessage(content=follow_up)]
    again = clean_reply(await model.ainvoke(turns))
    stands = reread(again, sources, questions) is None and off_subject(again, passages, *subject) is None
    return again if stands else UNKNOWN


def reread(answer: str, sources: str, questions: list[str]) -> str | None:
    """The turn that asks a hop's reader again when ``answer`` does not stand (not in ``sources``,
    or only what ``questions`` name); None when it stands or is unknown."""
    if answer == UNKNOWN:
        return None
    if not grounded(answer, sources):
        return render("hop_read_again")
    if restates(answer, questions):
        return render("hop_read_other", answer=answer)
    return None


def off_subject(answer: str, passages: list[Evidence], subject: str, template: str) -> str | None:
    """The turn that asks again when no passage that says ``answer`` names ``subject`` or is named
    by a passage that does (:func:`links`) (a later hop
    read off a passage about something else: "Which county borders Allamakee County?" answered
    with a county in Hungary); None when one does, or there is no subject or answer to check.

    ``subject`` is the earlier hop's answer this hop's question names; its words the question's
    ``template`` (the question without it) uses too do not count ("county" in "Which county
    borders #1?" says nothing about which county a passage is about).
    """
    names = terms(subject) - terms(template)
    if answer == UNKNOWN or not names:
        return None
    saying = [item for item in passages if holds(item, answer)]
    about = [item for item in passages if names & terms(f"{item['title']} {item['content']}")]
    if not saying or any(item in about or links(about, item) for item in saying):
        return None
    return render("hop_read_subject", answer=answer, subject=subject)


def links(about: list[Evidence], item: Evidence) -> bool:
    """Whether a passage of ``about`` names ``item``'s title: the answer may stand one link away
    from the subject (a hop left unsplit, "In which county is the birthplace of Miriam Calloway?",
    is answered by the passage on the village her passage names)."""
    title = item["title"].lower()
    return any(title in other["content"].lower() for other in about if other is not item)


def restates(answer: str, questions: list[str]) -> bool:
    """Whether ``answer`` only repeats what the questions already name ("Bansaan" for "Which island
    is Bansaan on?"): an answer brings something the question does not say."""
    words = terms(answer)
    return bool(words) and words <= set().union(*(terms(question) for question in questions))
