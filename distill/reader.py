"""Training examples for the hop reader, from the chains of QA run records (``questions.jsonl``).

A hop's example is the prompt its reader saw (``agents/hop_read.py``: the reader's system prompt,
the hop's passages cut to the sentences that matter, its question) and the reply it should have
given. Which reply that is, a run says only in part; these labels are silver, and only tuning
questions give them (a held-out question never trains a reader):

* the last hop of a chain: the gold answer (or the alias its passages give) when its passages hold
  it; ``unknown`` when they hold neither it nor any of the question's supporting documents (a last
  hop that answers from passages that cannot say makes a wrong complete chain, which the Writer
  reads worse than a broken one it reads whole). A last hop that read a supporting document but not
  the answer has no label: it was often asked about a wrong earlier answer, and its passages may
  well answer the question it was asked (a reader trained to refuse those left a third of its
  first hops unknown, docs/results.md 2026-12-01);
* an earlier hop of a chain whose answer was right: the answer it gave.

An earlier hop of a wrong chain has no label (its answer may or may not be what broke the chain)
and is left out, as is a hop whose passages the record does not hold.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import convert_to_openai_messages

from agents.chain_answer import UNKNOWN
from agents.hop_read import first_turns, hop_sources
from core.state import Evidence
from distill.examples import Example
from evals.chain_summary import misses_support, supporting_titles
from evals.metrics import cover
from evals.qa_data import split_of
from evals.record_metrics import SYSTEM, record_metrics, system_output

READER_MODE = "reader"
Label = Literal["gold", "unknown", "chain"]


def reader_messages(question: str, sources: str) -> list[dict[str, Any]]:
    """The chat a hop's reader is given first (``agents/hop_read.py``), as training messages."""
    return [dict(message) for message in convert_to_openai_messages(first_turns(sources, question))]


def labelled_hops(record: Mapping[str, Any]) -> list[tuple[Label, Example]]:
    """The labelled hops of one record's aisearch chain (the caller keeps held-out records out)."""
    system = system_output(record, SYSTEM) or {}
    chain = system.get("chain") or []
    if not chain:
        return []
    evidence = {item.get("id"): item for item in system.get("evidence") or []}
    golds = [record.get("gold") or "", *(record.get("aliases") or [])]
    right = record_metrics(record, SYSTEM)["em"] == 1.0
    supporting = supporting_titles(record)
    out: list[tuple[Label, Example]] = []
    for n, step in enumerate(chain, 1):
        question = step.get("question") or ""
        passages = [_evidence(evidence[eid]) for eid in step.get("evidence_ids") or [] if eid in evidence]
        if not passages or not question:
            continue
        sources = hop_sources(passages, question)
        label: Label
        if n == len(chain):
            said = next((gold for gold in golds if cover(sources, gold)), None)
            if said:
                label, target = "gold", said
            elif misses_support((passage["title"] for passage in passages), supporting):
                label, target = "unknown", UNKNOWN
            else:
                continue
        elif right and step.get("status") == "answered" and step.get("answer"):
            label, target = "chain", step["answer"]
        else:
            continue
        example = Example(f"{record['id']}#{n}", READER_MODE, reader_messages(question, sources), target)
        out.append((label, example))
    return out


def _evidence(item: Mapping[str, Any]) -> Evidence:
    return Evidence(
        id=item["id"],
        kind=item.get("kind") or "document",
        title=item.get("title", ""),
        content=item.get("content", ""),
        source="",
        task_id="",
    )


def reader_examples(records: Iterable[Mapping[str, Any]]) -> tuple[list[Example], dict[str, int]]:
    """Every labelled hop of ``records``, each prompt once, and the counts by label (and of the
    held-out records left out)."""
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    examples: list[Example] = []
    for record in records:
        if record.get("id") is None:
            counts["records_without_id"] += 1
            continue
        if split_of(str(record["id"])) == "held_out":
            counts["held_out_records"] += 1
            continue
        for label, example in labelled_hops(record):
            key = json.dumps(example.messages)
            if key in seen:
                continue
            seen.add(key)
            counts[label] += 1
            examples.append(example)
    return examples, dict(counts)


def write_examples(examples: Iterable[Example], path: Path) -> None:
    """Write ``examples`` as JSON lines (what ``aisearch distill train --examples`` reads)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps(asdict(example), ensure_ascii=False) for example in examples)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def read_examples(path: Path) -> list[Example]:
    """The examples of a file :func:`write_examples` wrote.

    Raises:
        FileNotFoundError: No such file.
        ValueError: A line that is not an example.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no examples at {path}")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out.append(
                Example(str(row["task_id"]), str(row["mode"]), list(row["messages"]), str(row["target"]))
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a training example ({exc})") from exc
    return out
