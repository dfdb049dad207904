"""The answer a hop chain gives (``agents/hop_chain.py``): its last hop's answer, each hop a cited reason.

A chain whose every hop was answered needs no further model call: the last hop asked what the
question asks, and each hop's question with its answer, cited to the passage that holds it, is
the explanation ("Which county is Van Hook Township in? Mountrail County [2]."). A chain that
broke off leaves its findings to the Writer, which reads every passage found.
"""

from __future__ import annotations

import re

from agents.focus import terms
from agents.short_answer import short_of
from core.state import ChainStep, Evidence, HopRecord, SearchState, task_evidence_ids

UNKNOWN = "unknown"
WHOLE_QUESTION = "q"  # the task id of a broken chain's search of the whole question
NOT_SAID = re.compile(
    r"^\W*(unknown|not (stated|mentioned|given|specified|known)|no (answer|information)|n/?a|none|"
    r"the context does not|it is not|i (do not|don't|cannot))\b",
    re.IGNORECASE,
)


def clean_hop_answer(reply: str) -> str:
    """A hop's answer from the model's reply: its first line, without a marker; ``UNKNOWN`` when
    the reply says the passages do not tell."""
    answer = short_of(reply).strip().rstrip(".")
    return UNKNOWN if not answer or NOT_SAID.match(answer) else answer


def grounded(answer: str, context: str) -> bool:
    """Whether every content word of ``answer`` stands in ``context``: a hop's answer is read from
    its passages, not recalled (the 1.5B answers "Who is the sibling of Natalie Wood?" with a
    name no passage holds, beside "Lana Wood, the sister of Natalie Wood")."""
    words = terms(answer)
    return bool(words) and words <= terms(context)


def complete(hops: list[HopRecord]) -> bool:
    """Whether every hop of a chain was answered."""
    return bool(hops) and all(record["status"] == "answered" for record in hops)


def holds(item: Evidence, answer: str) -> bool:
    """Whether the passage ``item`` (its title or text) says ``answer`` word for word, any case."""
    return answer.lower() in f"{item['title']} {item['content']}".lower()


def source_of(answer: str, task_evidence: list[str], sources: list[Evidence]) -> int | None:
    """The 1-based number of the hop's passage that holds ``answer`` (its first passage otherwise)."""
    numbers = {item["id"]: n for n, item in enumerate(sources, start=1)}
    hop_numbers = [numbers[eid] for eid in task_evidence if eid in numbers]
    for n in hop_numbers:
        if holds(sources[n - 1], answer):
            return n
    return hop_numbers[0] if hop_numbers else None


def broken_chain_sources(
    hops: list[HopRecord], evidence_ids: dict[str, list[str]], sources: list[Evidence]
) -> list[Evidence]:
    """What the Writer reads when a chain broke off: the passages a search of the whole question
    found, first (what single-shot RAG reads), then the passage that holds each answered hop's
    answer. The other hop passages stay out: a hop whose answer led nowhere filled them with
    what a wrong turn found."""
    by_id = {item["id"]: item for item in sources}
    chosen = [by_id[eid] for eid in evidence_ids.get(WHOLE_QUESTION, []) if eid in by_id]
    for record in hops:
        if record["status"] != "answered":
            continue
        hop_sources = (by_id[eid] for eid in evidence_ids.get(record["task_id"], []) if eid in by_id)
        found = next((item for item in hop_sources if holds(item, record["answer"])), None)
        if found is not None and found not in chosen:
            chosen.append(found)
    return chosen or sources


def chain_reasons(hops: list[HopRecord], evidence_ids: dict[str, list[str]], sources: list[Evidence]) -> str:
    """Each hop's question and answer as one cited sentence."""
    lines = []
    for record in hops:
        n = source_of(record["answer"], evidence_ids.get(record["task_id"], []), sources)
        cite = f" [{n}]" if n else ""
        lines.append(f"{record['query'].rstrip('?')}? {record['answer']}{cite}.")
    return " ".join(lines)


def on_the_way(hops: list[HopRecord]) -> list[HopRecord]:
    """The answered hops a later hop asks about (its step names ``#n``): answers on the way to the
    question's, unlike a hop the split asked beside the others ("Which TV series is set in Bikini
    Bottom?" before "Who created Robocalypse?"), whose answer may be the question's."""
    later = [record["step"] for record in hops]
    return [
        record
        for n, record in enumerate(hops, start=1)
        if record["status"] == "answered" and any(f"#{n}" in step for step in later[n:])
    ]


def findings(hops: list[HopRecord]) -> str:
    """What the answered hops found, for the Writer's prompt ("" when none)."""
    found = [
        f"{record['query'].rstrip('?')}? {record['answer']}"
        for record in hops
        if record["status"] == "answered"
    ]
    return "Found step by step: " + "; ".join(found) + "\n" if found else ""


def chain_record(hops: list[HopRecord], state: SearchState) -> list[ChainStep]:
    """The chain as the answer records it: each hop's question as searched, its answer and status,
    and the passages it read, by title and id (what a trace needs to say where a chain broke, and
    what a reader's training example is made of: ``distill/reader.py``)."""
    evidence = state.get("evidence", {})
    read = [
        [eid for eid in task_evidence_ids(state, record["task_id"]) if eid in evidence] for record in hops
    ]
    return [
        ChainStep(
            question=record["query"] or record["step"],
            answer=record["answer"],
            status=record["status"],
            titles=[evidence[eid]["title"] for eid in ids],
            evidence_ids=ids,
        )
        for record, ids in zip(hops, read, strict=True)
    ]
