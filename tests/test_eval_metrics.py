"""Answer metrics against hand-computed cases (SQuAD/HotpotQA conventions)."""

from __future__ import annotations

import pytest

from evals.metrics import (
    citation_scores,
    content_words,
    cover,
    exact_match,
    normalize_answer,
    support,
    title_recall,
    token_f1,
    win_tie_lose,
)


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  A   cat, an  apple!  ", "cat apple"),
        ("Arthur's Magazine", "arthurs magazine"),
        ("theatre", "theatre"),  # an article inside a word stays
        ("U.S.A.", "usa"),
        ("", ""),
        (None, ""),
    ],
)
def test_normalize_answer_follows_squad(raw, normalised):
    assert normalize_answer(raw) == normalised


def test_exact_match_ignores_case_articles_and_punctuation():
    assert exact_match("the Arthur's Magazine.", "Arthur's Magazine") == 1.0
    assert exact_match("Arthur's", "Arthur's Magazine") == 0.0
    assert exact_match(None, "") == 1.0


def test_token_f1_of_partial_overlaps():
    # prediction "city of paris" (3 tokens) vs gold "paris": P 1/3, R 1 -> F1 0.5
    assert token_f1("the city of Paris", "Paris") == pytest.approx(0.5)
    # 2 shared of 3 predicted and 4 gold tokens: P 2/3, R 1/2 -> F1 4/7
    assert token_f1("John Smith Jr", "John Smith of York") == pytest.approx(4 / 7)
    # repeated tokens count by multiplicity: pred "new new york", gold "new york": common 2 -> P 2/3 R 1 -> 0.8
    assert token_f1("new new york", "new york") == pytest.approx(0.8)
    assert token_f1("Dune", "Dune") == 1.0
    assert token_f1("Foundation", "Dune") == 0.0
    assert token_f1("", "") == 0.0  # the official HotpotQA scorer gives 0 here


def test_token_f1_yes_no_rule():
    assert token_f1("yes", "yes") == 1.0
    assert token_f1("No.", "no") == 1.0
    assert token_f1("yes", "no") == 0.0
    # plain token F1 would give 2/3 here; a yes/no answer that differs scores 0
    assert token_f1("yes it is", "yes") == 0.0
    assert token_f1("yes", "yes it is") == 0.0
    assert token_f1("noanswer", "no answer") == 0.0


def test_cover_is_word_boundary_aware():
    assert cover("Arthur's Magazine was started first [1].", "Arthur's Magazine") == 1.0
    assert cover("It is in Paris.", "paris") == 1.0
    assert cover("Paris", "Paris") == 1.0
    assert cover("Parisian cafes", "Paris") == 0.0
    assert cover("an art gallery", "art") == 1.0
    assert cover("a smart move", "art") == 0.0
    assert cover("anything", "") == 0.0
    assert cover(None, "x") == 0.0


def test_title_recall_counts_distinct_gold_titles():
    assert title_recall(["A", "B"], ["A", "A", "C"]) == 0.5
    assert title_recall(["A", "A", "B"], ["A", "B"]) == 1.0
    assert title_recall([], ["A"]) == 0.0
    assert title_recall(["A", "B"], []) == 0.0


def test_content_words_and_support():
    # "was" is a stop word, "s" and "is" too short, the citation marker is ignored
    assert content_words("Arthur's Magazine was started first [123].") == {
        "arthur",
        "magazine",
        "started",
        "first",
    }
    passage = "Arthur's Magazine was an American literary periodical started in 1844."
    assert support("Arthur's Magazine was started first.", passage) == pytest.approx(0.75)
    assert support("It is.", passage) == 0.0


def test_citation_scores_on_a_hand_made_answer():
    eiffel = "Eiffel Tower. The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
    beach = "Sunny beaches attract tourists who love the sea."
    answer = [
        # 4 content words, 3 in eiffel (0.75: supported), 0 in beach (unsupported)
        ("The Eiffel Tower stands in Paris [1][2].", [eiffel, beach]),
        # 6 content words; "tourists", "love", "sunny", "beaches" in beach (4/6: supported)
        ("Tourists love lovely sunny beaches everywhere [2].", [beach]),
        # factual (4 content words) but cites nothing
        ("Gustave Eiffel designed wonderful bridges.", []),
        # not factual (one content word) but cites an unsupporting passage
        ("Truly [1].", [eiffel]),
    ]
    scores = citation_scores(answer)
    assert scores["citations"] == 4
    assert scores["supported_citations"] == 2
    assert scores["precision"] == pytest.approx(0.5)
    assert scores["factual_sentences"] == 3
    assert scores["supported_sentences"] == 2
    assert scores["recall"] == pytest.approx(2 / 3)


def test_citation_scores_resolves_numbers_and_handles_empty_denominators():
    passages = ["Eiffel Tower in Paris, France, a wrought-iron tower."]
    numbered = citation_scores([("The Eiffel Tower stands in Paris.", [1, 7])], passages)
    assert numbered["precision"] == pytest.approx(0.5)  # citation 7 has no passage: unsupported
    assert numbered["recall"] == 1.0
    empty = citation_scores([("Yes.", [])])
    assert empty["precision"] is None and empty["recall"] is None
    assert citation_scores([])["citations"] == 0


def test_win_tie_lose():
    assert win_tie_lose(1.0, 0.5) == "win"
    assert win_tie_lose(0.5, 1.0) == "lose"
    assert win_tie_lose(0.5, 0.5) == "tie"
    assert win_tie_lose(0.5, 0.5 + 1e-12) == "tie"
    assert win_tie_lose(0.6, 0.5, eps=0.2) == "tie"
