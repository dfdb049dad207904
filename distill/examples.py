"""Training examples from curated trajectories: chat prompt and target, mixed rationale (TURA §4.3.2).

Every kept trajectory gives two examples, one per executor mode: the ``thought`` prompt with the
thought and the calls as target, and the ``nothought`` prompt with the calls alone (train with thought
and without, infer without). :func:`encode` masks the prompt so the cross-entropy of Eq. 8 is taken
over the target tokens only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evals.bfcl_data import BfclTask
from evals.bfcl_run import messages_for
from evals.executor_prompts import EXECUTOR_MODES, target_text

IGNORE_INDEX = -100  # labels torch's cross-entropy skips
END_OF_TURN = "<|im_end|>"


@dataclass(frozen=True)
class Example:
    """One supervised example: the chat messages before the reply, and the reply."""

    task_id: str
    mode: str
    messages: list[dict[str, Any]]
    target: str


def examples_for(item: dict[str, Any], task: BfclTask) -> list[Example]:
    """The thought and no-thought examples of one curated trajectory; the no-thought one alone for a
    reference trajectory (``source`` ``reference``: it has no thought to train on)."""
    out = []
    for mode in EXECUTOR_MODES:
        if mode == "thought" and item.get("source") == "reference":
            continue
        thought = (item.get("thought") or "") if mode == "thought" else None
        out.append(Example(task.id, mode, messages_for(task, mode), target_text(item["calls"], thought)))
    return out


def encode(tokenizer: Any, example: Example, max_tokens: int) -> tuple[list[int], list[int]] | None:
    """Token ids and labels (the prompt masked with :data:`IGNORE_INDEX`); None when too long."""
    prompt = tokenizer.apply_chat_template(example.messages, tokenize=False, add_generation_prompt=True)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    target_ids = tokenizer(example.target + END_OF_TURN, add_special_tokens=False)["input_ids"]
    if len(prompt_ids) + len(target_ids) > max_tokens:
        return None
    return prompt_ids + target_ids, [IGNORE_INDEX] * len(prompt_ids) + target_ids
