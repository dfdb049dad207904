"""Human in the loop: what a paused run asks (LangGraph ``interrupt`` payloads) and what a person answers.

Two pauses, both off unless a run turns them on (``Settings.clarify``, ``Settings.review_plan``):

- **clarification** (``agents/clarify.py``): the Master found the question ambiguous (NaviAgent's
  intent clarification). Payload ``{"kind": "clarification", "question", "query", "error"}``; the
  answer is text, or ``{"answer": text}``. It is folded into the query (:func:`fold_answer`) and
  the Master reads the query again; an empty answer goes on with the question as asked.
- **plan review** (``agents/plan_review.py``): after the Planner's first plan. Payload
  ``{"kind": "plan_review", "query", "plan", "waves", "tools", "error"}``; the reply is
  ``"approve"``, ``"reject"``, ``{"action": "approve"}``, ``{"action": "reject", "reason": …}`` or
  ``{"action": "edit", "plan": {"tasks": [...]}}`` (a replacement plan, checked by
  :func:`core.plan.validate_plan` against the candidate tools in ``tools``).

A reply the node cannot read, or an edited plan that is not valid, is not an error of the run: the
node asks again with the same question and ``error`` saying what was wrong, so the person can
fix it, approve the original plan or reject it. Callers resume a paused run with
``Command(resume=reply)`` on its thread (``app/http_conversations.py``'s ``/conversations/{id}/resume``,
``aisearch ask --interactive``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import TypedDict

from core.state import PlanData

PlanAction = Literal["approve", "edit", "reject"]


class ReplyError(ValueError):
    """A reply that does not answer the pending request; the message says what would."""


class ClarificationRequest(TypedDict):
    """The Master asks what an ambiguous question means."""

    kind: Literal["clarification"]
    question: str
    query: str
    error: str | None


class PlanReviewRequest(TypedDict):
    """The run asks a person to approve, edit or reject the plan before anything runs."""

    kind: Literal["plan_review"]
    query: str
    plan: PlanData
    waves: list[list[str]]
    tools: list[str]
    error: str | None


HumanRequest = ClarificationRequest | PlanReviewRequest


class PlanDecision(BaseModel):
    """A person's verdict on a plan: approve it, replace it (``plan``), or reject it (``reason``)."""

    model_config = ConfigDict(extra="forbid")

    action: PlanAction
    plan: dict[str, Any] | list[Any] | None = None
    reason: str = ""


PLAN_REPLY_FORMS = (
    '"approve", "reject", {"action": "approve"}, {"action": "reject", "reason": "..."} or '
    '{"action": "edit", "plan": {"tasks": [...]}}'
)


def read_clarification(value: Any) -> str:
    """The answer to a clarification: text, or ``{"answer": text}`` (whitespace collapsed; may be empty).

    Raises:
        ReplyError: For anything else.
    """
    if isinstance(value, dict) and set(value) == {"answer"}:
        value = value["answer"]
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReplyError('a clarification is answered with text, or {"answer": "..."}')
    return " ".join(value.split())


def read_plan_decision(value: Any) -> PlanDecision:
    """A plan review reply as a :class:`PlanDecision` (its plan not yet validated).

    Raises:
        ReplyError: A reply of another shape, or an edit without a plan.
    """
    if isinstance(value, str) and value.strip().lower() in {"approve", "reject"}:
        value = {"action": value.strip().lower()}
    try:
        decision = PlanDecision.model_validate(value)
    except ValidationError:
        raise ReplyError(f"a plan review is answered with {PLAN_REPLY_FORMS}") from None
    if decision.action == "edit" and not decision.plan:
        raise ReplyError('an edit needs the replacement plan: {"action": "edit", "plan": {"tasks": [...]}}')
    return decision


def read_reply(request: Any, value: Any) -> str | PlanDecision:
    """Check ``value`` against the pending ``request`` (an interrupt payload) before resuming.

    Raises:
        ReplyError: The reply does not fit the request, or the request is not one of ours.
    """
    kind = request.get("kind") if isinstance(request, dict) else None
    if kind == "clarification":
        return read_clarification(value)
    if kind == "plan_review":
        return read_plan_decision(value)
    raise ReplyError(f"the run is paused on a request this server does not know ({kind!r})")


def fold_answer(query: str, answer: str) -> str:
    """The query with the person's clarification folded in: ``"When was he born? (Albert Einstein)"``."""
    answer = " ".join(answer.split())
    return f"{query.rstrip()} ({answer})" if answer else query
