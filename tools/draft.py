"""DRAFT (seed 001 §3.3.1): a tool's document rewritten from trials of the live tool.

Each round:

1. **Explorer** (Eq. 1): writes a trial, a user query and the tool arguments for it, from the
   current document, the direction the rewriter suggested and the earlier trials. A trial whose
   query's MiniLM cosine to an earlier one is at least ``phi`` is rejected (Eq. 2) and the explorer
   is told why (a Reflexion-style note), within ``max_tries``.
2. The trial is run against the live tool through the hub.
3. **Analyzer** (Eq. 3): compares the document with what the tool did and suggests fixes.
4. **Rewriter** (Eq. 4): writes the new document and the next exploration direction.

The loop stops when Δ = (cosine + BLEU) / 2 between consecutive versions exceeds ``tau`` (Eq. 5:
the document stopped changing) or at ``max_rounds``. The result is stored beside the original
(``<tools dir>/refined/<tool>.json``: the original, every version, the trials and the Δs); the
hub shows the refined document instead of the original while the tool's original is unchanged
(``tools/refinements.py``). The original is never overwritten; ``aisearch tools refine --diff`` shows
what changed and ``--drop`` goes back to it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, ValidationError

from models.factory import ChatFn
from models.structured import StructuredOutputError, decode_entities, extract_json
from prompts import render
from tools.hub import ToolHub, ToolSpec
from tools.index.embedder import TextEmbedder
from tools.refinements import Refinement, description_hash

log = logging.getLogger(__name__)
MAX_DOC_CHARS = 3000
# a reply must hold a whole rewritten document (up to MAX_DOC_CHARS, ~750 tokens) in its JSON:
# at 700 tokens the 1.5B's rewrites of the calculator's document were cut off mid-string
REPLY_TOKENS = 1200
MAX_RESULT_CHARS = 1200
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class DraftLimits:
    """DRAFT's thresholds and budgets (the paper leaves them open: these are ours)."""

    phi: float = 0.9  # a trial at least this similar to an earlier one is rejected
    tau: float = 0.75  # Δ above this ends the refinement
    max_rounds: int = 4
    max_tries: int = 3  # explorer (and rewriter) attempts per round before the round is given up
    timeout_s: float = 30.0  # per trial call


class Trial(BaseModel):
    """The explorer's trial: what a user asks, and the call that should answer it."""

    query: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


def _plain(value: Any) -> Any:
    """Quotes the model wrote as character references, even doubly (``&amp;#34;``), as quotes."""
    for _ in range(3):
        if not isinstance(value, str) or (decoded := decode_entities(value)) == value:
            break
        value = decoded
    return value


class Rewrite(BaseModel):
    """The rewriter's new document and the next direction to explore."""

    document: Annotated[str, BeforeValidator(_plain), Field(min_length=1)]
    next_direction: str = ""


def delta(embedder: TextEmbedder, previous: str, current: str) -> float:
    """Eq. 5: the mean of the two versions' MiniLM cosine and their BLEU (0-1)."""
    from sacrebleu.metrics.bleu import BLEU

    vectors = embedder.encode([previous, current])
    cosine = float(vectors[0] @ vectors[1])
    bleu = BLEU(effective_order=True).sentence_score(current, [previous]).score / 100
    return round((cosine + bleu) / 2, 4)


def _ask(chat: ChatFn, prompt: str, shape: type[M]) -> M | None:
    try:
        value = extract_json(chat([{"role": "user", "content": prompt}]))
        return shape.model_validate(value)
    except (StructuredOutputError, ValidationError, ValueError) as exc:
        log.warning("DRAFT: unusable %s reply: %s", shape.__name__, exc)
        return None


def _history(trials: list[dict[str, Any]]) -> str:
    return (
        "\n".join(
            f"- {trial['query']} -> {json.dumps(trial['arguments'])}: {trial['result'][:200]}"
            for trial in trials
        )
        or "(none yet)"
    )


async def refine_tool(
    spec: ToolSpec,
    hub: ToolHub,
    chat: ChatFn,
    embedder: TextEmbedder,
    limits: DraftLimits = DraftLimits(),
    on_round: Callable[[int, float | None], None] | None = None,
) -> Refinement:
    """Run DRAFT's rounds on ``spec`` against the live tool in ``hub``."""
    document = spec.description[:MAX_DOC_CHARS]
    refinement = Refinement(spec.name, spec.description, description_hash(spec.description))
    direction = "typical use of the tool"
    schema = json.dumps(spec.parameters.get("properties", {}))
    query_vectors: list[Any] = []
    for round_number in range(1, limits.max_rounds + 1):
        trial, note = None, ""
        for _ in range(limits.max_tries):
            prompt = render(
                "draft_explore", tool=spec.name, doc=document, schema=schema, direction=direction,
                history=_history(refinement.trials), note=note,
            )  # fmt: skip
            candidate = _ask(chat, prompt, Trial)
            if candidate is None:
                note = "Your last reply was not the JSON asked for."
                continue
            vector = embedder.encode([candidate.query])[0]
            closest = max((float(vector @ earlier) for earlier in query_vectors), default=0.0)
            if closest >= limits.phi:
                refinement.rejected += 1
                note = f'"{candidate.query}" is too close to an earlier trial; explore a different case.'
                continue
            trial = candidate
            query_vectors.append(vector)
            break
        if trial is None:
            refinement.stop = "explorer: no new trial"
            break
        outcome = await hub.call(spec.name, trial.arguments, timeout_s=limits.timeout_s)
        result = (outcome.output if outcome.ok else f"ERROR: {outcome.error}")[:MAX_RESULT_CHARS]
        refinement.trials.append(
            {"query": trial.query, "arguments": trial.arguments, "ok": outcome.ok, "result": result}
        )
        revisions = "\n---\n".join(refinement.versions[-2:]) or "(none yet)"
        suggestions = chat(
            [{"role": "user", "content": render(
                "draft_analyze", tool=spec.name, doc=document, query=trial.query,
                arguments=json.dumps(trial.arguments), result=result, revisions=revisions,
            )}]
        )  # fmt: skip
        prompt = render(
            "draft_rewrite", tool=spec.name, doc=document, query=trial.query,
            arguments=json.dumps(trial.arguments), result=result, suggestions=suggestions[:2000],
        )  # fmt: skip
        rewrite = None
        for _ in range(limits.max_tries):  # a sampled reply may break its JSON (an unescaped quote)
            rewrite = _ask(chat, prompt, Rewrite)
            if rewrite is not None:
                break
        if rewrite is None:
            refinement.stop = "rewriter: no usable document"
            break
        new_document = rewrite.document[:MAX_DOC_CHARS]
        change = delta(embedder, document, new_document)
        refinement.versions.append(new_document)
        refinement.deltas.append(change)
        document, direction = new_document, rewrite.next_direction or direction
        if on_round is not None:
            on_round(round_number, change)
        if change > limits.tau:
            refinement.stop = f"converged: delta {change} > tau {limits.tau}"
            break
    else:
        refinement.stop = f"round budget ({limits.max_rounds}) spent"
    return refinement
