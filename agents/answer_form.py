"""Whether a question wants a short answer or a full one (rules, no model call).

Factoid questions ("Who directed X?", "Which came first, A or B?") are answered in a few words
and one cited sentence: the answer first, as a search engine shows it. Open questions — advice,
plans, analysis, a comparison to argue ("I'm planning a year-long trip on $5000: what are some
tips…?", "Analyze why…", "Which is better, A or B?") — want the answer in full: a one-sentence
summary first, then a few cited paragraphs that cover every part of the question (SRSA's
contextual queries, seed 002, are judged on informativeness, completeness and actionability).

The rules were read off the project's dev sets: they mark all 182 of SRSA's contextual queries
open and none of the 300 HotpotQA dev questions (``tests/test_answer_form.py`` keeps examples).
"""

from __future__ import annotations

import re

OPEN_WORDS = re.compile(
    r"\b(tips?|advice|advise|recommend\w*|suggest\w*|should (i|we)|how (can|could|do|should|would) "
    r"(i|we|one|you)|how can (consumers|people|users|travell?ers)|what are (some|the best|good)|"
    r"pros and cons|strateg(y|ies)|ideas|best ways?|ways to|better(?!\s+known)|more suitable|report|"
    r"analy[sz]e|differences)\b",
    re.IGNORECASE,
)
ASKER = re.compile(
    r"\b(I|I'm|I've|I'd|[Mm]y|me|[Ww]e|[Oo]ur)\s+[a-z]"
)  # not "I Love Lucy", "My Cousin Rachel"
TASK = re.compile(
    r"(^|[.?!]\s+)(please\s+)?(analy[sz]e|research|investigate|write|tell me|explain|compare|describe|"
    r"discuss|summari[sz]e|list|give me|help me|why)\b",
    re.IGNORECASE,
)


def is_open_question(query: str) -> bool:
    """Whether ``query`` asks for advice, a plan, an analysis or an argued choice, not a fact."""
    return bool(OPEN_WORDS.search(query) or ASKER.search(query) or TASK.search(query.strip()))
