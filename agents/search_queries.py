"""The search loop's queries: what counts as a query, the model's sub-queries, the first round's.

A small model sometimes writes code or echoes its prompt instead of a query, copies the prompt's
example queries into unrelated tasks, or shortens a name the task spells out; the rules here keep
the loop's queries plausible, on topic and no narrower than the task's goal.
"""

from __future__ import annotations

import html
import logging
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, BeforeValidator, Field

from core.plan import REF_PATTERN, Task
from core.text import STOPWORDS, content_words
from models.structured import structured_call
from prompts import render

log = logging.getLogger(__name__)

MAX_SUBQUERIES = 3
MAX_QUERY_WORDS = 16
MAX_QUERY_CHARS = 160
MAX_CODE_MARKS = 4
STEM = 4  # letters two words share to count as one ("opened", "open") when queries are compared
# words every search prompt shares, so they say nothing about a sub-query's topic
SEARCH_STOPWORDS = STOPWORDS | frozenset("find look search query queries".split())


def normalize_query(query: str) -> str:
    """A query's identity: lower case, single spaces."""
    return " ".join(query.lower().split())


def plausible_query(query: str) -> bool:
    """Whether ``query`` reads like a search query: a few words, not code, not an echoed prompt.

    A small coder model sometimes writes a call (``json.dumps({'name': 'Alice'})``) or repeats its
    instructions instead of a query; such a "query" only pulls in noise.
    """
    words = query.split()
    code_marks = sum(query.count(mark) for mark in "{}[]()=\"'`;<>&#")
    return (
        0 < len(words) <= MAX_QUERY_WORDS
        and len(query) <= MAX_QUERY_CHARS
        and code_marks <= MAX_CODE_MARKS
        and "already searched" not in query.lower()
    )


def _first_three(value: Any) -> Any:
    """Keep the first three distinct plausible queries (a model may write more, or repeat one)."""
    if not isinstance(value, list):
        return value
    distinct: dict[str, str] = {}
    for query in value:
        query = html.unescape(query) if isinstance(query, str) else query
        if isinstance(query, str) and plausible_query(query):
            distinct.setdefault(normalize_query(query), " ".join(query.split()))
    return list(distinct.values())[:MAX_SUBQUERIES]


Queries = Annotated[list[str], BeforeValidator(_first_three), Field(max_length=MAX_SUBQUERIES)]


class SubQueries(BaseModel):
    """The executor's search queries for one round."""

    queries: Queries


def plan_query(task: Task, query_arg: str) -> str | None:
    """The query the plan wrote for ``task`` (none when it is empty or waits on a reference)."""
    value = (task.args or {}).get(query_arg)
    if isinstance(value, str) and value.strip() and not REF_PATTERN.search(value):
        return value.strip()
    return None


async def write_subqueries(
    model: BaseChatModel,
    goal: str,
    *,
    constrain: bool = False,
    inputs: str = "",
    previous: str = "",
) -> list[str]:
    """1-3 search queries for ``goal`` from ``model`` (the goal itself if it gives none).

    ``previous`` tells the model which queries were already asked and what they missed;
    ``constrain`` asks the endpoint for schema-constrained JSON (llama.cpp grammars).
    """
    prompt = render("executor_subqueries", goal=goal, inputs=inputs, previous=previous)
    result = await structured_call(
        model,
        [HumanMessage(content=prompt)],
        SubQueries,
        fallback=lambda errors: SubQueries(queries=[goal]),
        constrain=constrain,
    )
    # a sub-query must share a content word with the task (or what was found so far): a small
    # model otherwise copies the prompt's example queries into unrelated tasks
    context = content_words(f"{goal} {inputs} {previous}", SEARCH_STOPWORDS)
    kept = [query for query in result.value.queries if content_words(query, SEARCH_STOPWORDS) & context]
    if len(kept) < len(result.value.queries):
        log.info("dropped sub-queries unrelated to the task: %s", set(result.value.queries) - set(kept))
    return kept


def first_queries(task: Task, planned: str) -> list[str]:
    """The plan's query, and the task's goal beside it when the goal names more: the Planner shortens
    names ("Philippine Poly" for the Polytechnic University of the Philippines) and its query then
    finds the other entity."""
    goal = goal_query(task)
    stems = {word[:STEM] for word in content_words(planned, SEARCH_STOPWORDS)}
    extra = {word for word in content_words(goal, SEARCH_STOPWORDS) if word[:STEM] not in stems}
    return [planned, goal] if extra else [planned]


def goal_query(task: Task) -> str:
    """The task's goal as a query (cut to the query length limit at a word boundary)."""
    goal = " ".join(task.goal.split())
    return goal if len(goal) <= MAX_QUERY_CHARS else goal[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]
