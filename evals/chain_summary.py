"""Where hop chains break: from a QA run's records, how often the question was split into a chain,
and for each hop whether its passages held a supporting document (retrieval) and whether it was
answered (reading).

A chain question answered wrong is put down to the first of: a hop whose passages hold none of the
question's supporting titles (retrieval), a hop its passages did not answer (reading: unknown), or,
every hop answered, a wrong answer somewhere along the way (reading: wrong). Without gold answers
per hop the last cannot say which hop; the per-hop retrieval rates narrow it down.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evals.record_metrics import answer_em


def chain_kind(output: Mapping[str, Any]) -> str:
    """How aisearch read a question: ``chain complete``, ``chain broken`` or ``no chain``."""
    chain = output.get("chain") or []
    if not chain:
        return "no chain"
    return "chain complete" if all(step.get("status") == "answered" for step in chain) else "chain broken"


def supporting_titles(record: Mapping[str, Any]) -> set[str]:
    """The titles of the documents a question's answer rests on (none when the record lists none)."""
    titles = record.get("supporting_titles")
    return {str(title) for title in titles} if isinstance(titles, list) else set()


def misses_support(titles: Iterable[str], supporting: set[str]) -> bool:
    """Whether passages with these ``titles`` hold none of the ``supporting`` documents (never, when
    the question names none): a hop that retrieval failed."""
    return bool(supporting) and not supporting & set(titles)


def _break_of(chain: Sequence[Mapping[str, Any]], supporting: set[str]) -> str:
    for k, step in enumerate(chain, start=1):
        if misses_support(step.get("titles") or [], supporting):
            return f"retrieval at hop {k}"
        if step.get("status") != "answered":
            return f"reading at hop {k} (unknown)"
    return "reading (an answer along the way wrong)"


def chain_breaks(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-hop retrieval and reading rates of the run's chains, and where wrong chains broke."""
    hops: dict[int, Counter[str]] = {}
    breaks: Counter[str] = Counter()
    chains = right = 0
    for record in records:
        output = (record.get("systems") or {}).get("aisearch") or {}
        chain = output.get("chain") or []
        if not chain:
            continue
        chains += 1
        supporting = supporting_titles(record)
        for k, step in enumerate(chain, start=1):
            counts = hops.setdefault(k, Counter())
            counts["reached"] += 1
            counts["retrieved"] += bool(supporting & set(step.get("titles") or []))
            counts["answered"] += step.get("status") == "answered"
        if answer_em(record, "aisearch") == 1.0:  # right as the run's EM counts it
            right += 1
        else:
            breaks[_break_of(chain, supporting)] += 1
    return {
        "questions": len(records),
        "chains": chains,
        "chains_right": right,
        "hops": {str(k): dict(counts) for k, counts in sorted(hops.items())},
        "breaks": dict(breaks.most_common()),
    }


def chain_lines(breaks: Mapping[str, Any]) -> list[str]:
    """The report's section on hop chains (nothing when no question was split)."""
    if not breaks or not breaks.get("chains"):
        return []
    out = [
        "## Hop chains: where they break",
        "",
        f"{breaks['chains']} of {breaks['questions']} questions were split into a chain; "
        f"{breaks['chains_right']} of those answered exactly right.",
        "",
        "| hop | reached | passages hold a supporting title | answered |",
        "|---|---|---|---|",
    ]
    for k, counts in breaks["hops"].items():
        out.append(
            f"| {k} | {counts.get('reached', 0)} | {counts.get('retrieved', 0)} | {counts.get('answered', 0)} |"
        )
    out += ["", "| wrong chain, first break | questions |", "|---|---|"]
    out += [f"| {where} | {n} |" for where, n in breaks["breaks"].items()]
    return [*out, ""]
