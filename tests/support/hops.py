"""The fictional three-hop question the hop-chain tests share, and its scripted models' replies."""

from __future__ import annotations

import re
from collections.abc import Callable

THREE_HOPS = "In which county is the birthplace of the engineer who built the Harrow Point Lighthouse?"
SPLIT = "1. Who built the Harrow Point Lighthouse?\n2. Where was #1 born?\n3. In which county is #2?"
ANSWERS = {
    "Who built the Harrow Point Lighthouse": "Miriam Calloway",
    "Where was Miriam Calloway born": "the village of Dunmore",
    "In which county is the village of Dunmore": "Stirlingshire",
}
MARKED = {
    THREE_HOPS: "In which county is the birthplace of [the engineer who built the Harrow Point Lighthouse]?",
    "In which county is the birthplace of Miriam Calloway?": "In which county is [the birthplace of Miriam Calloway]?",
}
MARKED_ANSWERS = {
    "Who or what is the engineer who built the Harrow Point Lighthouse": "Miriam Calloway",
    "Who or what is the birthplace of Miriam Calloway": "the village of Dunmore",
    "In which county is the village of Dunmore": "Stirlingshire",
}


def hop_reader(answers: dict[str, str]) -> Callable[[str], str]:
    """A scripted hop reader: the answer for the question the prompt asks ("unknown" otherwise)."""

    def reply(prompt: str) -> str:
        question = re.search(r"Question: (.+?)\??\s*\nAnswer:", prompt)
        return answers.get(question.group(1) if question else "", "unknown")

    return reply


def marker(marked: dict[str, str]) -> Callable[[str], str]:
    """A scripted marking model: the bracketed copy of the question it is given, or a plain copy."""

    def reply(prompt: str) -> str:
        question = prompt.strip().splitlines()[-1]
        return marked.get(question, question)

    return reply
