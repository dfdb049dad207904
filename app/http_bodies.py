"""The HTTP app's request bodies, LangServe's shapes: ``{"input", "config", "kwargs"}``.

``config.configurable`` carries the thread id and the per-run settings a caller may change (the
routing, the budgets, whether the run may pause for a person: ``clarify``, ``review_plan``, and
whether it may answer from the caches: ``cache``); anything else in it is refused with 422 naming the field, so a typo
never runs silently with the defaults. A bad value (an empty query, ``max_replans: -1``) is a
422 too, checked here before anything runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic.fields import FieldInfo

from core.query import QueryError, prepare_query
from core.settings import Settings
from core.settings_groups import Budgets

THREAD_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
MAX_BATCH = 32


class QueryInput(BaseModel):
    """The graph's input: the question of this turn."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="The question (at most 2,000 characters are read).")

    @field_validator("query")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        try:
            prepare_query(value)
        except QueryError as exc:
            raise ValueError(str(exc)) from None
        return value


def _override(field: FieldInfo) -> tuple[Any, Any]:
    """A budget as an override: its type or None, None by default."""
    annotation: Any = field.annotation  # a type form, which | None takes at run time
    return annotation | None, Field(default=None, description=f"default {field.default}")


if TYPE_CHECKING:  # built from Budgets' fields at run time; a type checker sees a model of unknown fields

    class BudgetOverrides(BaseModel):
        """Budgets of this run."""

else:
    _OVERRIDES: dict[str, Any] = {name: _override(field) for name, field in Budgets.model_fields.items()}
    BudgetOverrides = create_model(
        "BudgetOverrides",
        __config__=ConfigDict(extra="forbid"),
        __doc__="Budgets of this run; the ones left out keep the server's settings.",
        **_OVERRIDES,
    )


class Configurable(BaseModel):
    """``config.configurable``: the thread and this run's settings."""

    model_config = ConfigDict(extra="forbid")

    thread_id: str | None = Field(
        default=None,
        pattern=THREAD_ID,
        description="Continue this thread (created if new); omitted: a new thread.",
    )
    routing: Literal["cheap", "llm"] | None = Field(
        default=None, description="Who picks the route: rules and classifier first, or the LLM always."
    )
    budgets: BudgetOverrides | None = None
    clarify: bool | None = Field(
        default=None,
        description="The Master may pause the run to ask what an ambiguous question means (default off).",
    )
    review_plan: bool | None = Field(
        default=None,
        description="Pause after the Planner's first plan for approval, an edit or a rejection (default off).",
    )
    cache: bool | None = Field(
        default=None,
        description="false: answer afresh, reading neither the answer cache nor the tool-call cache "
        "(the new answer is still kept for later runs).",
    )

    @model_validator(mode="after")
    def _budgets_in_range(self) -> Configurable:
        if self.budgets is not None:
            Budgets.model_validate(self.budget_overrides())  # the bounds of each budget (ge, le)
        return self

    def budget_overrides(self) -> dict[str, Any]:
        """The budgets this run sets."""
        return self.budgets.model_dump(exclude_none=True) if self.budgets is not None else {}

    def apply(self, settings: Settings) -> Settings:
        """``settings`` with this run's changes."""
        update: dict[str, Any] = {}
        if self.routing is not None:
            update["routing"] = self.routing
        for name in ("clarify", "review_plan"):
            if getattr(self, name) is not None:
                update[name] = getattr(self, name)
        if self.cache is not None:
            update["bypass_cache"] = not self.cache
        if overrides := self.budget_overrides():
            update["budgets"] = settings.budgets.model_copy(update=overrides)
        return settings.model_copy(update=update) if update else settings


class RunConfig(BaseModel):
    """LangServe's ``config``: only ``configurable`` is read; its other keys (tags, metadata,
    run_name) are accepted and recorded with the run."""

    model_config = ConfigDict(extra="ignore")

    configurable: Configurable = Configurable()
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    run_name: str | None = None


class InvokeBody(BaseModel):
    """``POST /invoke`` and ``/stream``."""

    model_config = ConfigDict(extra="forbid")

    input: QueryInput
    config: RunConfig = RunConfig()
    kwargs: dict[str, Any] = Field(default={}, description="Accepted for LangServe clients; unused.")


class StreamEventsBody(InvokeBody):
    """``POST /stream_events``: LangServe's body, with its filters of LangChain's event stream."""

    include_names: list[str] | None = None
    include_types: list[str] | None = None
    include_tags: list[str] | None = None
    exclude_names: list[str] | None = None
    exclude_types: list[str] | None = None
    exclude_tags: list[str] | None = None

    def filters(self) -> dict[str, list[str]]:
        """The filters set, as ``astream_events`` keyword arguments."""
        return self.model_dump(include=EVENT_FILTERS, exclude_none=True)


EVENT_FILTERS = {f"{verb}_{kind}" for verb in ("include", "exclude") for kind in ("names", "types", "tags")}


class ResumeBody(BaseModel):
    """``POST /conversations/{thread_id}/resume``: the reply to the run's pending request.

    ``config`` is the run's: send the same ``clarify``/``review_plan`` (and budgets) as the turn
    that paused, since the resumed run reads them again.
    """

    model_config = ConfigDict(extra="forbid")

    resume: Any = Field(
        description='The answer to a clarification (text), or a plan review\'s "approve", "reject", '
        '{"action": "reject", "reason": ...} or {"action": "edit", "plan": {"tasks": [...]}}.'
    )
    config: RunConfig = RunConfig()
    kwargs: dict[str, Any] = Field(default={}, description="Accepted for LangServe clients; unused.")


class BatchBody(BaseModel):
    """``POST /batch``: one config for every input, or one per input."""

    model_config = ConfigDict(extra="forbid")

    inputs: list[QueryInput] = Field(min_length=1, max_length=MAX_BATCH)
    config: RunConfig | list[RunConfig] = RunConfig()
    kwargs: dict[str, Any] = {}

    @model_validator(mode="after")
    def _configs_match_inputs(self) -> BatchBody:
        if isinstance(self.config, list) and len(self.config) != len(self.inputs):
            raise ValueError(f"config has {len(self.config)} entries for {len(self.inputs)} inputs")
        threads = [c.configurable.thread_id for c in self.configs() if c.configurable.thread_id]
        if len(threads) != len(set(threads)):
            raise ValueError("a thread id occurs twice: one run per thread at a time")
        return self

    def configs(self) -> list[RunConfig]:
        """The config of each input."""
        return self.config if isinstance(self.config, list) else [self.config] * len(self.inputs)
