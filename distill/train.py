"""``aisearch distill train``: LoRA SFT of the student on the curated trajectories (TURA Eq. 8).

The student starts from the executor's GGUF file, which ``transformers`` loads dequantized (Qwen2
architecture, ``gguf_file=``; ``distill/student.py``). LoRA adapters (``peft``) go on the attention and MLP projections of the
last ``layers`` decoder layers, so the backward pass stops there: that is what makes a CPU run
affordable (a GPU is used when torch sees one), as does computing logits only where the loss reads
them (:func:`target_loss`) and the frozen base in bfloat16 where the hardware computes it natively
(:func:`compute_dtype`). One example per step (the prompts differ in length), AdamW, loss on the
target tokens only. The learning rate warms up over the first steps and falls linearly to zero at ``max_steps``
(``schedule="linear"``, the usual SFT schedule: the last examples of the order do not pull the
weights as hard as the first; set ``max_steps`` to what ``max_minutes`` allows, or the decay is
cut short), or stays constant. The run is bounded by ``max_steps`` and ``max_minutes``; every ``save_every`` steps the adapter,
the optimizer and the step are saved, so a stopped run resumes. Every ``keep_every`` steps the
adapter is also kept as a snapshot (``snapshots/step-NNNNN``): where a run stopped has decided what
a student does (it declined nearly every call at one step and none a few hundred later), so a
student is chosen among its snapshots on a tuning split. Beside the adapter: ``train.log``
(one JSON line per step: loss, learning rate, seconds, peak memory), ``loss_curve.png`` and ``budget.json``.
"""

from __future__ import annotations

import json
import logging
import random
import resource
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from distill.examples import IGNORE_INDEX

log = logging.getLogger(__name__)

TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
ADAPTER = "adapter"
CHECKPOINT = "checkpoint"
SNAPSHOTS = "snapshots"
TRAIN_LOG = "train.log"
LOSS_CURVE = "loss_curve.png"
BUDGET = "budget.json"
WARMUP_SHARE = 0.03  # of max_steps, the linear schedule's warm-up


@dataclass(frozen=True)
class TrainOptions:
    """The LoRA run and its budget."""

    max_steps: int = 200
    max_minutes: float = 30.0
    learning_rate: float = 2e-4
    schedule: Literal["linear", "constant"] = "linear"
    rank: int = 8
    alpha: int = 16
    layers: int = 12  # LoRA on the last N decoder layers (docs/evaluation.md: 12 against 6)
    max_tokens: int = 1536  # longer examples are left out
    save_every: int = 20
    keep_every: int = 100  # a snapshot of the adapter every N steps (0: none)
    seed: int = 0
    weights: Literal["auto", "float32", "bfloat16"] = "auto"  # the frozen base's (see compute_dtype)


def snapshot_dir(out_dir: Path, step: int) -> Path:
    """Where the adapter as it stood after ``step`` steps is kept."""
    return out_dir / SNAPSHOTS / f"step-{step:05d}"


def snapshot_steps(out_dir: Path) -> list[int]:
    """The steps at which a run kept its adapter, in order."""
    folder = out_dir / SNAPSHOTS
    names = (path.name for path in folder.glob("step-*")) if folder.is_dir() else ()
    steps = (name.removeprefix("step-") for name in names)
    return sorted(int(step) for step in steps if step.isdigit())


def keep_snapshot(peft_model: Any, folder: Path) -> None:
    """Save the adapter into ``folder`` whole or not at all (written beside it, then renamed)."""
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    peft_model.save_pretrained(str(partial))
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def learning_rate_at(step: int, options: TrainOptions) -> float:
    """The learning rate of the step taken after ``step`` steps: constant, or (linear) rising over the
    first ``WARMUP_SHARE`` of ``max_steps`` to ``learning_rate`` and then falling to zero at ``max_steps``."""
    if options.schedule == "constant":
        return options.learning_rate
    warmup = max(1, round(options.max_steps * WARMUP_SHARE))
    if step < warmup:
        return options.learning_rate * (step + 1) / warmup
    return options.learning_rate * max(0.0, options.max_steps - step) / max(1, options.max_steps - warmup)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def compute_dtype(weights: str, device: str) -> Any:
    """The dtype the frozen base computes in: bfloat16 where the hardware multiplies it natively (a
    GPU that supports it; a CPU with AVX512-BF16 or AMX: steps about a third as long, the loss
    within about 1 %, docs/results.md), float32 otherwise; ``weights`` names one to force it. The
    adapters and their optimizer stay float32 either way."""
    import torch

    if weights != "auto":
        return getattr(torch, weights)
    if device == "cuda":
        native = torch.cuda.is_bf16_supported()
    else:  # oneDNN's own check (AVX512-BF16 or AMX); no public one exists
        probe = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
        native = bool(probe()) if probe is not None else False
    return torch.bfloat16 if native else torch.float32


def on_device(model: Any, device: str, dtype: Any) -> Any:
    """``model`` on ``device`` with its weights in ``dtype``; its buffers stay as they are (the
    rotary frequencies rounded to bfloat16 would shift every position's angle)."""
    model.to(device)
    for param in model.parameters():
        param.data = param.data.to(dtype)
    return model


def target_loss(model: Any, ids: list[int], labels: list[int], device: str) -> Any:
    """The mean cross-entropy of the target tokens (the model's own loss for these labels), with the
    vocabulary projection computed only at the positions that predict them.

    The prompt (the tools' schemas) is most of an example and the reply a few dozen tokens; the
    model's own loss projects every position onto the 151,936-token vocabulary and then ignores
    the prompt's.
    """
    import torch

    positions = [p for p in range(len(ids) - 1) if labels[p + 1] != IGNORE_INDEX]
    if not positions:
        raise ValueError("an example without target tokens")
    output = model(
        input_ids=torch.tensor([ids], device=device),
        logits_to_keep=torch.tensor(positions, device=device),
        use_cache=False,
    )
    targets = torch.tensor([labels[p + 1] for p in positions], device=device)
    return torch.nn.functional.cross_entropy(output.logits[0].float(), targets)


def lora_model(model: Any, options: TrainOptions) -> Any:
    """``model`` wrapped with LoRA adapters on the last ``options.layers`` layers."""
    from peft import LoraConfig, get_peft_model

    total = model.config.num_hidden_layers
    config = LoraConfig(
        r=options.rank,
        lora_alpha=options.alpha,
        lora_dropout=0.0,
        target_modules=list(TARGET_MODULES),
        layers_to_transform=list(range(max(0, total - options.layers), total)),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config, autocast_adapter_dtype=True)  # float32 adapters on any base


def _plot(losses: list[tuple[int, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.5))
    steps, values = zip(*losses, strict=True) if losses else ((), ())
    axes.plot(steps, values, linewidth=1, label="loss (target tokens)")
    if len(values) >= 10:
        window = max(5, len(values) // 20)
        smooth = [
            sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
            for i in range(len(values))
        ]
        axes.plot(steps, smooth, linewidth=2, label=f"mean of {window}")
    axes.set_xlabel("step (one example)")
    axes.set_ylabel("cross-entropy")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _read_log(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def train(
    model: Any,
    encoded: list[tuple[list[int], list[int]]],
    out_dir: Path,
    options: TrainOptions,
    *,
    show_progress: bool = False,
) -> dict[str, Any]:
    """LoRA-train ``model`` on ``encoded`` (ids, labels) pairs into ``out_dir``; resumes a stopped run.

    Returns:
        The budget actually used: steps, minutes, peak memory, first and last loss.

    Raises:
        ValueError: When there is nothing to train on.
    """
    import torch
    from peft import set_peft_model_state_dict
    from tqdm import tqdm

    if not encoded:
        raise ValueError("no training examples (curate first, or raise --max-tokens)")
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(options.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = compute_dtype(options.weights, device)
    peft_model = lora_model(on_device(model, device, dtype), options)
    peft_model.train()
    trainable = [p for p in peft_model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=options.learning_rate)
    checkpoint = out_dir / CHECKPOINT
    log_path = out_dir / TRAIN_LOG
    step, seconds_before = 0, 0.0
    if (checkpoint / "state.pt").is_file():
        state = torch.load(checkpoint / "state.pt", weights_only=False)
        set_peft_model_state_dict(peft_model, state["adapter"])
        optimizer.load_state_dict(state["optimizer"])
        step, seconds_before = state["step"], state["seconds"]
        log.info("resuming at step %d", step)
    history = [r for r in _read_log(log_path) if r["step"] <= step]
    log_path.write_text("".join(json.dumps(r) + "\n" for r in history), encoding="utf-8")
    order = list(range(len(encoded)))
    started = time.perf_counter()
    bar = tqdm(
        total=options.max_steps,
        initial=step,
        desc="train",
        unit="step",
        file=sys.stderr,
        disable=not show_progress,
    )

    def save() -> None:
        checkpoint.mkdir(exist_ok=True)
        seconds = seconds_before + time.perf_counter() - started
        from peft import get_peft_model_state_dict

        state = {"adapter": get_peft_model_state_dict(peft_model), "optimizer": optimizer.state_dict()}
        torch.save({**state, "step": step, "seconds": seconds}, checkpoint / "state.pt.tmp")
        (checkpoint / "state.pt.tmp").replace(checkpoint / "state.pt")

    while step < options.max_steps:
        if (seconds_before + time.perf_counter() - started) / 60 >= options.max_minutes:
            log.info("time budget of %.1f min reached at step %d", options.max_minutes, step)
            break
        epoch, index = divmod(step, len(order))
        if index == 0:
            random.Random(options.seed + epoch).shuffle(order)
        ids, labels = encoded[order[index]]
        loss = target_loss(peft_model, ids, labels, device)
        loss.backward()
        rate = learning_rate_at(step, options)
        for group in optimizer.param_groups:
            group["lr"] = rate
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        record = {
            "step": step,
            "loss": round(float(loss.detach()), 5),
            "tokens": len(ids),
            "lr": rate,
            "seconds": round(seconds_before + time.perf_counter() - started, 2),
            "peak_rss_mb": peak_rss_mb(),
        }
        with open(log_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        bar.update(1)
        bar.set_postfix(loss=record["loss"])
        if step % options.save_every == 0:
            save()
        if options.keep_every and step % options.keep_every == 0:
            keep_snapshot(peft_model, snapshot_dir(out_dir, step))
    bar.close()
    save()
    peft_model.save_pretrained(str(out_dir / ADAPTER))
    history = _read_log(log_path)
    _plot([(r["step"], r["loss"]) for r in history], out_dir / LOSS_CURVE)
    budget = {
        "steps": step,
        "examples": len(encoded),
        "minutes": round((seconds_before + time.perf_counter() - started) / 60, 2),
        "peak_rss_mb": peak_rss_mb(),
        "first_loss": history[0]["loss"] if history else None,
        "last_loss": history[-1]["loss"] if history else None,
        "options": asdict(options),
        "torch_threads": torch.get_num_threads(),
        "device": device,
        "dtype": str(dtype).removeprefix("torch."),
    }
    (out_dir / BUDGET).write_text(json.dumps(budget, indent=2) + "\n", encoding="utf-8")
    return budget
