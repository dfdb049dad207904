"""The entities a comparison question names, found by rules (no model call).

SRSA's parallel strategy (seed 002) searches every entity of a comparison at once. Comparison
questions name their entities in a few fixed forms, which rules read reliably and for free:

* "Which came first, A or B?", "Who is older A or B?", "…: A or B?" — the names around " or ";
* "Were A and B both …?", "Are both A and B …?", "What do A and B have in common?" — around " and ".

A name is a run of capitalised words (or a quoted title) with the small words names contain
("of", "the", "de", "v.", "&"…) allowed inside it.
"""

from __future__ import annotations

import re

from tools.question_forms import COMPARISON_FORM

CONNECTORS = frozenset("of the de del der la le von van da di du y and & v. vs. for in on at a an 's".split())
QUESTION_WORDS = frozenset(
    "which who whom whose what when where why how is are was were do does did can could has have had "
    "between in".split()
)
TOKEN = re.compile(r'"[^"]+"|“[^”]+”|[\w][\w.\'’&-]*|[,:;?!()]|\S')
MAX_FACETS = 4
DESCRIBING = frozenset(  # capitalised adjectives that follow the last name of a "both" question
    "american british english french german italian spanish portuguese dutch belgian swiss austrian "
    "irish scottish welsh canadian australian mexican brazilian argentine argentinian russian polish "
    "swedish norwegian danish finnish greek turkish indian pakistani chinese japanese korean thai "
    "vietnamese indonesian filipino egyptian african european asian latin christian catholic jewish "
    "muslim islamic protestant armenian iranian israeli ukrainian czech hungarian romanian serbian "
    "croatian zimbabwean nigerian".split()
)


def _is_name_word(token: str) -> bool:
    return token[:1].isupper() or token[:1].isdigit() or token[:1] in '"“'


def _is_capitalised(token: str) -> bool:
    return token[:1].isupper() or token[:1] in '"“'


def delexicalize(question: str) -> str:
    """The question with every name after its first word replaced by ``X`` (numbers kept)."""
    tokens = TOKEN.findall(" ".join(question.split()))
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if i == 0 or not _is_capitalised(tokens[i]):
            out.append(tokens[i])
            i += 1
            continue
        j = i + 1
        while j < len(tokens) and (
            _is_name_word(tokens[j])
            or (
                tokens[j].lower() in CONNECTORS
                and tokens[j].lower() != "and"
                and j + 1 < len(tokens)
                and _is_name_word(tokens[j + 1])
            )
        ):
            j += 1
        out.append("X")
        i = j
    return " ".join(out)


def _name_start(tokens: list[str], end: int) -> int:
    """Where the name that ends at ``tokens[end - 1]`` starts (``end`` if that is not a name)."""
    start = end
    while start > 0:
        token = tokens[start - 1]
        if _is_name_word(token):
            start -= 1
        elif token.lower() in CONNECTORS and start - 1 > 0 and _is_name_word(tokens[start - 2]):
            start -= 1
        else:
            break
    while start < end and (tokens[start].lower() in CONNECTORS or tokens[start].lower() in QUESTION_WORDS):
        start += 1
    return start


def _name_before(tokens: list[str], end: int) -> str:
    """The name that ends at ``tokens[end - 1]`` (empty if that is not part of a name)."""
    return _join(tokens[_name_start(tokens, end) : end])


def _name_after(tokens: list[str], begin: int) -> str:
    """The name that starts at ``tokens[begin]`` (a leading "the" is skipped)."""
    while begin < len(tokens) and tokens[begin].lower() in {"the", "a", "an"}:
        begin += 1
    end = begin
    while end < len(tokens):
        token = tokens[end]
        if _is_name_word(token):
            end += 1
        elif (
            token.lower() in CONNECTORS
            and token.lower() != "and"
            and end + 1 < len(tokens)
            and _is_name_word(tokens[end + 1])
        ):
            end += 1
        else:
            break
    # "Were A and B British film directors?": the adjectives after a name describe, not name
    described = end == len(tokens) or tokens[end][:1].islower() or tokens[end] in {"?", "!", "."}
    while described and end - begin > 1 and tokens[end - 1].lower() in DESCRIBING:
        end -= 1
    return _join(tokens[begin:end])


def _join(tokens: list[str]) -> str:
    text = " ".join(tokens).replace(" 's", "'s")
    return text.strip().strip('"“”')


YES_NO_OPENERS = frozenset(
    "is are was were am do does did can could has have had will would should shall may might must".split()
)


def is_yes_no_question(question: str) -> bool:
    """Whether the question is answered yes or no: it opens with an auxiliary verb ("Were both …?",
    "Is X in Y?") and offers no "A or B" choice."""
    words = question.split()
    return bool(words) and words[0].lower() in YES_NO_OPENERS and not answer_choices(question)


def answer_choices(question: str) -> list[str]:
    """The options a choice question offers ("Which came first, A or B?" → ``[A, B]``), else ``[]``.

    Only "A or B" questions: "Were A and B both …?" is answered yes or no.
    """
    return _facets(question, joiners=("or",))


def comparison_facets(question: str) -> list[str]:
    """The entities a comparison question compares, or ``[]`` when it is not one by these rules."""
    return _facets(question, joiners=("or", "and"))


def _facets(question: str, joiners: tuple[str, ...]) -> list[str]:
    tokens = TOKEN.findall(" ".join(question.split()))
    if not tokens:
        return []
    for joiner in joiners:
        positions = [i for i, token in enumerate(tokens) if token.lower() == joiner]
        for i in reversed(positions):
            comma = i > 0 and tokens[i - 1] == ","
            left = _name_before(tokens, i - 1 if comma else i)
            right = _name_after(tokens, i + 1)
            if left and right and left.lower() != right.lower():
                if joiner == "and" and not COMPARISON_FORM.search(question):
                    continue
                facets = [left, right]
                # "A, B, or C": earlier names of a list with a comma before its "or"
                start = _name_start(tokens, i - 1)
                while comma and len(facets) < MAX_FACETS:
                    while start > 0 and tokens[start - 1].lower() in {"the", "a", "an"}:
                        start -= 1
                    if start < 2 or tokens[start - 1] != ",":
                        break
                    earlier = _name_start(tokens, start - 1)
                    if earlier == start - 1:
                        break
                    facets.insert(0, _join(tokens[earlier : start - 1]))
                    start = earlier
                return facets
    return []
