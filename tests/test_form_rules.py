"""The comparison rules' recall and false positives are counted per part (tuning, held out)."""

from __future__ import annotations

from evals.form_rules import report, rule_counts
from evals.qa_data import split_of


def test_each_rule_is_counted_on_the_part_its_question_belongs_to() -> None:
    questions = [
        {
            "id": "a1",
            "question": "Who was born first, Ada Lovelace or Charles Babbage?",
            "type": "comparison",
        },
        {"id": "a2", "question": "Cranium and Twin Tin Bots are both what?", "type": "comparison"},
        {"id": "a3", "question": "Where was the director of Inception born?", "type": "bridge"},
    ]
    counts = rule_counts(questions)

    for question in questions:
        assert split_of(question["id"]) in counts
    total = {
        name: {
            key: sum(counts[part][name][key] for part in counts) for key in ("labelled", "found", "others")
        }
        for name in ("facets", "settled")
    }
    assert total["settled"] == {"labelled": 2, "found": 1, "others": 1}, "a shared attribute is not settled"
    assert total["facets"]["found"] == 2, "both name two entities"
    assert sum(counts[part]["facets"]["false_positives"] for part in counts) == 0
    assert "| settled | " in report(counts)
