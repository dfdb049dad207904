"""How the question-form rules that recognise a comparison do on the tuning and held-out parts.

``python -m evals.form_rules --data ../shared/data/hotpotqa/dev.jsonl`` reads every question of a
set whose ``type`` field labels comparisons (HotpotQA's ``comparison``/``bridge``) and reports,
for each part (``evals/qa_data.py split_of``), how many comparisons each rule recognises (recall)
and how many other questions it takes for one (false positives):

* ``facets``: ``agents/facets.py comparison_facets`` names two or three compared entities (the
  Master's facets, the parallel strategy's per-entity searches);
* ``settled``: ``agents/compare.py comparison_of`` reads a form the Writer settles in code
  (earlier, later, more, less, choice, both).

No model runs: the rules alone, in a second.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents.compare import comparison_of
from agents.facets import comparison_facets
from evals.qa_data import read_jsonl, split_of

RULES: dict[str, Callable[[str], bool]] = {
    "facets": lambda question: len(comparison_facets(question)) >= 2,
    "settled": lambda question: comparison_of(question) is not None,
}


def rule_counts(
    questions: Sequence[Mapping[str, Any]], label: str = "comparison"
) -> dict[str, dict[str, dict[str, int]]]:
    """Per part, per rule: ``{"labelled", "found", "others", "false_positives"}``."""
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for question in questions:
        part = split_of(str(question["id"]))
        labelled = question.get("type") == label
        for name, rule in RULES.items():
            row = counts.setdefault(part, {}).setdefault(
                name, {"labelled": 0, "found": 0, "others": 0, "false_positives": 0}
            )
            hit = rule(str(question["question"]))
            row["labelled" if labelled else "others"] += 1
            row["found" if labelled else "false_positives"] += int(hit)
    return counts


def report(counts: Mapping[str, Mapping[str, Mapping[str, int]]]) -> str:
    """A Markdown table: part, rule, recall on the labelled questions, false positives on the others."""
    lines = ["| part | rule | recall | false positives |", "|---|---|---|---|"]
    for part in sorted(counts):
        for name, row in counts[part].items():
            recall = row["found"] / row["labelled"] if row["labelled"] else 0.0
            lines.append(
                f"| {part} | {name} | {row['found']}/{row['labelled']} ({recall:.2f}) "
                f"| {row['false_positives']}/{row['others']} |"
            )
    return "\n".join(lines)


def main() -> None:
    """Print the table (and the counts as JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="questions JSONL with id, question and type")
    parser.add_argument("--label", default="comparison", help="the type the rules should recognise")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args()
    counts = rule_counts(read_jsonl(args.data), args.label)
    print(json.dumps(counts, indent=2) if args.json else report(counts))  # noqa: T201 - the command's output


if __name__ == "__main__":
    main()
