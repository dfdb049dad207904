"""Which indexed documents a text names by title: the link hop of a serial search."""

from __future__ import annotations

from tools.index.links import TitleLinks, linked_documents, title_key

PASSAGES = [
    ("p1", "Harrow Point Lighthouse", 0),
    ("p2", "Miriam Calloway", 0),
    ("p3", "Queen of Blood (film)", 0),
    ("p4", "Paris", 0),
    ("p5", "Paris", 1),  # a later passage of the same document
    ("p6", "Up", 0),  # too short to link: it is an ordinary word
    ("p7", "H. G. Wells", 0),
    ("p8", "Paris Hilton", 0),
]


def test_title_key_drops_the_disambiguation() -> None:
    assert title_key("Queen of Blood (film)") == "Queen of Blood"
    assert title_key("  Dunmore  ") == "Dunmore"


def test_a_text_names_documents_by_whole_words_in_order_of_mention() -> None:
    links = TitleLinks(PASSAGES)
    text = "Built by Miriam Calloway, it appears in Queen of Blood. Up the coast lies Parisian H. G. Wells."
    assert [d.title for d in links.mentioned(text)] == [
        "Miriam Calloway",
        "Queen of Blood (film)",
        "H. G. Wells",
    ]
    assert not links.mentioned("miriam calloway in paris"), "case matters: names are capitalised"


def test_a_title_links_to_its_first_passage_and_the_longest_name_wins() -> None:
    links = TitleLinks(PASSAGES)
    assert [d.lead_id for d in links.mentioned("She moved to Paris.")] == ["p4"]
    assert [d.title for d in links.mentioned("Paris Hilton visited.")] == ["Paris Hilton"]


def test_linked_documents_leave_out_the_passages_own_documents() -> None:
    links = TitleLinks(PASSAGES)
    texts = [
        "Who built the Harrow Point Lighthouse?",
        "The Harrow Point Lighthouse was built by Miriam Calloway.",
    ]
    found = linked_documents(links, texts, own_titles=["Harrow Point Lighthouse"])
    assert [d.title for d in found] == ["Miriam Calloway"]
