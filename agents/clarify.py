"""Intent clarification (NaviAgent's clarify action): the run pauses to ask what the question means.

The Master (``agents/master.py``) comes here when its LLM assessment names a question to ask and
the run allows asking (``Settings.clarify``, off by default). This node pauses the run with
LangGraph's ``interrupt``; a caller resumes it with ``Command(resume=answer)``. The answer is
folded into the query and the Master reads it again; it does not ask twice in one turn.

A node of its own so that resuming re-runs only this cheap node (LangGraph re-executes the
interrupted node from its start), not the Master's document probe and LLM call.
"""

from __future__ import annotations

import logging
from typing import Literal

from langgraph.types import Command, interrupt

from core.human import ClarificationRequest, ReplyError, fold_answer, read_clarification
from core.state import Clarification, SearchState

log = logging.getLogger(__name__)


async def clarify(state: SearchState) -> Command[Literal["master"]]:
    """Ask the pending question; fold the answer into the query and hand it back to the Master.

    A reply that is not text is asked again with ``error`` set; an empty answer keeps the query as asked.
    """
    pending = state.get("clarification")
    asked = pending["asked_query"] if pending else state.get("query", "")
    question = pending["question"] if pending else "What do you mean?"
    error: str | None = None
    while True:
        reply = interrupt(
            ClarificationRequest(kind="clarification", question=question, query=asked, error=error)
        )
        try:
            answer = read_clarification(reply)
            break
        except ReplyError as exc:
            error = str(exc)
    query = fold_answer(asked, answer)
    log.info("clarified %r as %r", asked, query)
    record = Clarification(question=question, asked_query=asked, answer=answer, status="answered")
    return Command(goto="master", update={"query": query, "clarification": record})
