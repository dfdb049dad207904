"""The Writer's short answer, parsed from real-format output of the local 1.5B Writer."""

from __future__ import annotations

import pytest

from agents.short_answer import split_short_answer

# replies captured from Qwen2.5-Coder-1.5B on the writer_answer prompt (HotpotQA dev questions)
REAL_REPLY = (
    "Answer: October Revolution\n"
    "Because:\n"
    "[1] Alexander Kerensky was defeated and destroyed by the Bolsheviks in the course of a civil war "
    "that ended when October Revolution. [2] The October Revolution was an attempt by Alexander "
    "Kerensky to regain power."
)


def test_the_marker_line_is_the_short_answer_and_the_rest_the_cited_explanation() -> None:
    short, body = split_short_answer(REAL_REPLY)
    assert short == "October Revolution"
    assert body.startswith("[1] Alexander Kerensky") and "Because" not in body


@pytest.mark.parametrize(
    ("reply", "short", "body"),
    [
        ("**Answer:** Yes [1]", "Yes", "Yes [1]"),  # nothing else: the cited line is the explanation
        ("Answer:\nLiu Che\nHe was born in 156 BC [1].", "Liu Che", "He was born in 156 BC [1]."),
        ("Short answer: 56 years.\nWu was older [3].", "56 years", "Wu was older [3]."),
        ("Great Exuma\nBecause: It hosted the event [2].", "Great Exuma", "It hosted the event [2]."),
        (
            "Julius Caesar was born in 100 BC [1]. He died in 44 BC [2].",
            "Julius Caesar was born in 100 BC",
            "Julius Caesar was born in 100 BC [1]. He died in 44 BC [2].",
        ),
        ("Michael J. Fox [1]. He played Marty.", "Michael J. Fox", "Michael J. Fox [1]. He played Marty."),
        ("", "", ""),
    ],
)
def test_format_variants(reply: str, short: str, body: str) -> None:
    assert split_short_answer(reply) == (short, body)
