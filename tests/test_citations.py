"""The Writer's citation check: uncited sentences attributed to their source, unsupported ones dropped."""

from __future__ import annotations

from agents.citations import check_citations, support
from core.state import Evidence


def source(title: str, content: str, kind: str = "document") -> Evidence:
    """A numbered source of the Writer's prompt."""
    return Evidence(
        id=title.lower(), kind=kind, title=title, source=f"docs/{title}", content=content, task_id="t1"
    )  # type: ignore[typeddict-item]


JSON = source(
    "json",
    "If indent is a non-negative integer, JSON array elements and object members are "
    "pretty-printed with that indent level by json.dumps().",
)
BRIDGE = source(
    "Kestrel Bridge", "The Kestrel Bridge is a steel arch bridge over the river Ome, opened in 1932."
)


def test_an_uncited_sentence_gets_the_source_that_supports_it() -> None:
    text = "Use json.dumps with a non-negative indent to pretty-print JSON. The bridge opened in 1932 [2]."

    check = check_citations(text, [JSON, BRIDGE])

    assert (
        check.text
        == "Use json.dumps with a non-negative indent to pretty-print JSON [1]. The bridge opened in 1932 [2]."
    )
    assert [a["n"] for a in check.attributed] == [1] and check.dropped == []


def test_a_citation_its_source_does_not_support_is_dropped_and_replaced() -> None:
    text = "The Kestrel Bridge over the river Ome opened in 1932 [1]."

    check = check_citations(text, [JSON, BRIDGE])

    assert check.text == "The Kestrel Bridge over the river Ome opened in 1932 [2]."
    assert check.dropped[0]["n"] == 1 and check.attributed[0]["n"] == 2


def test_code_blocks_short_lines_and_unsupported_claims_are_left_alone() -> None:
    text = (
        "Here is an example:\n```python\nimport json\nprint(json.dumps(data, indent=4))\n```\n"
        "Penguins cannot fly but swim remarkably well underwater."
    )

    check = check_citations(text, [JSON, BRIDGE])

    assert check.text == text and check.attributed == [] and check.dropped == []


def test_a_quoted_source_sentence_is_not_split_or_attributed() -> None:
    fox = source(
        "McFly family",
        "Marty (Jr.) and Marlene McFly (both portrayed by Michael J. Fox) are the future twins of Marty McFly.",
    )
    text = "“Marty (Jr.) and Marlene McFly (both portrayed by Michael J. Fox) are the future twins of Marty McFly.” [2]"

    check = check_citations(text, [BRIDGE, fox])

    assert check.text == text and check.attributed == [] and check.dropped == []


def test_a_sentence_is_not_cut_at_initials_or_an_abbreviation() -> None:
    fox = source("Back to the Future", "Marty McFly was played by Michael J. Fox in Back to the Future.")
    text = "Marty McFly was played by Michael J. Fox, an actor from Canada. Dr. Brown built the time machine [2]."

    check = check_citations(text, [fox, BRIDGE])

    assert check.text.startswith(
        "Marty McFly was played by Michael J. Fox, an actor from Canada [1]. Dr. Brown"
    )
    assert [a["n"] for a in check.attributed] == [1]


def test_model_knowledge_citations_are_not_second_guessed() -> None:
    memory = source("Birth year of Wu", "156 BC", kind="model")
    text = "Emperor Wu of Han was born in 156 BC according to the model [1]."

    assert check_citations(text, [memory]).text == text


def test_support_is_the_share_of_the_claims_content_words_in_the_source() -> None:
    assert support("The Kestrel Bridge opened in 1932 [1].", BRIDGE["content"]) == 1.0
    assert support("Glass frogs are transparent.", BRIDGE["content"]) == 0.0
    assert support("it is so", BRIDGE["content"]) == 0.0
