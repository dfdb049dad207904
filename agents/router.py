"""The Master's cheap routing: rules, the document probe and the route classifier, before any LLM.

Seed 001 §2 with Adaptive-RAG's lesson: the route decision should cost little. The Master's LLM
assessment is the most expensive call of a run, so the obvious cases are decided without it, in
this order:

1. **rules**: a question that asks for a computed difference ("by how many years") → Planner; an
   arithmetic expression, or current time, weather or prices outside the documents → Executor
   with a tool; a comparison whose entities the rules can name ("which came first, A or B"),
   which the documents cover → Executor, *direct*: the question names both entities, so its
   own top passages hold both articles, and the 1.5B reader picks the right side from them more
   often than from per-entity searches (HotpotQA dev, the first 55 comparisons read with the
   Writer's prompt: EM 0.436 from the question's top 5; 0.382 in v3's *parallel* runs and
   0.364–0.418 reading the *parallel* strategy's passages with either prompt; RAG 0.473);
   *parallel* stays for the comparisons the classifier or the LLM name;
2. **classifier**: the nearest labelled example queries (``agents/route_classifier.py``), when
   their vote is clear and agrees with what the probe says the documents cover. A *direct* vote
   on documents whose server follows links becomes *serial*: its link hop costs no model call,
   and on HotpotQA dev (v3, 24 such questions) direct answered 1 where RAG answered 3, while
   serial found both supporting passages for 75 % of bridge questions against direct's 38 %;
3. **probe**: the documents cover the question (the probe's best passage is similar enough) and
   nothing above decided → Executor, *serial*: the question's top passages, then the documents
   they name (the link hop costs no model call, so a question that turns out to be single-hop
   loses nothing but a few milliseconds; with a model-written second hop it was *direct*, since
   that hop cost about 6 s and brought the answer into view for 3 of 58 dev questions);
4. **probe floor**: a factual question whose best passage is on the documents' topic but not
   close (``document_probe_floor`` up to ``document_probe_similarity``) → Executor, *serial*,
   hop by hop. The LLM assessment could only choose among search strategies there (memory is
   ruled out for a factual question on the documents' topic), at 4-8 s of the 1.5B's tokens:
   long compositional questions land in this band (12 of 97 MuSiQue, 7 of 300 HotpotQA dev
   questions), and the LLM sent them to one *direct* search.

What is left (a follow-up that needs the conversation, an open question or one off the
documents' topic that the classifier is unsure about) goes to the LLM assessment.
"""

from __future__ import annotations

import logging
import re
from typing import Protocol

from agents.answer_form import is_open_question
from agents.facets import comparison_facets
from agents.route_classifier import Label, RouteGuess
from core.state import Complexity, DecidedBy, Strategy
from tools.question_forms import ARITHMETIC, LIVE
from tools.question_forms import COMPUTED_DIFFERENCE as COMPUTED

log = logging.getLogger(__name__)

LABELS: dict[Label, tuple[Complexity, Strategy]] = {
    "writer_only": ("simple", "direct"),
    "direct": ("moderate", "direct"),
    "serial": ("complex", "serial"),
    "parallel": ("complex", "parallel"),
    "planner": ("complex", "parallel"),
    "tool": ("moderate", "direct"),
}
SEARCH_LABELS = frozenset({"direct", "serial", "parallel"})
# a person the question does not name: without a conversation, only the asker knows who is meant
UNRESOLVED = re.compile(r"\b(he|she|him|her|his|hers|they|them|their|theirs)\b", re.IGNORECASE)


def needs_tools(query: str) -> bool:
    """Whether the question needs more than search: a computation or live information."""
    return bool(COMPUTED.search(query) or ARITHMETIC.search(query) or LIVE.search(query))


class Classifier(Protocol):
    """Anything that guesses a route label for a query."""

    def classify(self, query: str) -> RouteGuess:
        """The label of ``query`` and how sure it is."""
        ...


class CheapRoute:
    """A route decided without the LLM: the complexity and strategy, and who decided."""

    def __init__(
        self,
        complexity: Complexity,
        strategy: Strategy,
        decided_by: DecidedBy,
        why: str,
        facets: list[str] | None = None,
    ) -> None:
        """Record the verdict (``why`` is a one-line rationale shown in traces)."""
        self.complexity = complexity
        self.strategy = strategy
        self.decided_by = decided_by
        self.why = why
        self.facets = facets or []

    @property
    def needs_external_info(self) -> bool:
        """Whether the route searches or calls tools."""
        return self.complexity != "simple"


def cheap_route(
    query: str,
    *,
    has_history: bool,
    covered: bool,
    classifier: Classifier | None,
    follows_links: bool = False,
    may_ask: bool = False,
    on_topic: bool = False,
) -> CheapRoute | None:
    """The route the rules, the probe and the classifier agree on, or None for the LLM to decide.

    Args:
        query: The question as asked.
        has_history: Whether earlier turns exist (a follow-up needs the LLM to resolve it).
        covered: Whether the document probe found a passage similar enough to the question.
        classifier: The route classifier (None skips it).
        follows_links: Whether the documents' search server follows links (``follow_links``), so
            a serial search's second hop costs no model call.
        may_ask: Whether the run may ask the user what the question means: a question about a
            person it does not name ("When was he born?") then goes to the LLM, which may ask.
        on_topic: Whether the probe's best passage is at least ``document_probe_floor`` similar:
            a factual question is then searched, whatever the classifier or the LLM would say.
    """
    if has_history or (may_ask and UNRESOLVED.search(query)):
        return None
    if COMPUTED.search(query):
        facets = comparison_facets(query)
        return CheapRoute("complex", "parallel", "rules", "asks for a computed quantity", facets)
    if ARITHMETIC.search(query) or (LIVE.search(query) and not covered):
        return CheapRoute("moderate", "direct", "rules", "needs a tool: a calculation or live information")
    facets = comparison_facets(query)
    if facets and covered:
        why = f"compares {' and '.join(facets)}: one search of the question finds both"
        return CheapRoute("moderate", "direct", "rules", why, facets)
    relevant = covered or (on_topic and not is_open_question(query))
    guess = classifier.classify(query) if classifier is not None else None
    if guess is not None and guess.confident:
        complexity, strategy = LABELS[guess.label]
        searches = guess.label in SEARCH_LABELS
        if searches == relevant or guess.label == "planner":
            why = f"like the example queries labelled {guess.label} (vote {guess.share:.2f})"
            if guess.label == "direct" and follows_links:
                strategy, why = "serial", f"{why}; the link hop is free: search them and what they name"
            return CheapRoute(complexity, strategy, "classifier", why, facets)
    if covered:
        return CheapRoute(
            "moderate", "serial", "probe", "the documents cover it: search them and what they name", facets
        )
    if relevant:
        why = "a factual question on the documents' topic: search them hop by hop, not memory"
        return CheapRoute("moderate", "serial", "probe", why, facets)
    return None
