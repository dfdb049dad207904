"""LoRA training and GGUF export on a TINY randomly initialised Qwen2 (built here, no download)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
gguf = pytest.importorskip("gguf")

from distill.examples import IGNORE_INDEX, Example, encode  # noqa: E402
from distill.export import ExportError, merged_weights, write_gguf  # noqa: E402
from distill.train import (  # noqa: E402
    ADAPTER,
    BUDGET,
    LOSS_CURVE,
    TRAIN_LOG,
    TrainOptions,
    compute_dtype,
    learning_rate_at,
    snapshot_dir,
    snapshot_steps,
    target_loss,
    train,
)

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
EXAMPLES = [
    Example(
        "t1",
        "nothought",
        [{"role": "user", "content": "weather in Rome"}],
        '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]}',
    ),
    Example(
        "t2",
        "thought",
        [{"role": "user", "content": "tell me a joke"}],
        '{"thought": "no tool fits", "tool_calls": []}',
    ),
]


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    """A byte-level BPE tokenizer trained on the examples, with ChatML."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    core.train_from_iterator([e.target + m["content"] for e in EXAMPLES for m in e.messages], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    return fast


def tiny_model(vocab: int) -> Any:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        initializer_range=0.5,  # logits that can move: with 0.02 a 32-wide head stays near uniform
    )
    return Qwen2ForCausalLM(config)


def test_encode_masks_the_prompt_and_skips_long_examples(tokenizer: Any) -> None:
    ids, labels = encode(tokenizer, EXAMPLES[0], 512)
    prompt = sum(1 for label in labels if label == IGNORE_INDEX)
    assert len(ids) == len(labels) and 0 < prompt < len(ids)
    assert tokenizer.decode(ids[prompt:]).startswith('{"tool_calls"')
    assert tokenizer.decode(ids[prompt:]).endswith("<|im_end|>")
    assert encode(tokenizer, EXAMPLES[0], 8) is None


def test_the_linear_schedule_warms_up_and_ends_at_zero_and_constant_stays() -> None:
    linear = TrainOptions(max_steps=100, learning_rate=1e-3)
    rates = [learning_rate_at(step, linear) for step in range(100)]

    assert rates[0] == pytest.approx(1e-3 / 3) and rates[2] == pytest.approx(1e-3), "three warm-up steps"
    assert max(rates) == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(rates[2:], rates[3:], strict=False)), "falls after the warm-up"
    assert 0 < rates[-1] < 1e-4 and learning_rate_at(100, linear) == 0.0
    constant = TrainOptions(max_steps=100, learning_rate=1e-3, schedule="constant")
    assert {learning_rate_at(step, constant) for step in range(100)} == {1e-3}


def test_the_loss_projects_only_the_target_positions_and_equals_the_models_own(tokenizer: Any) -> None:
    ids, labels = encode(tokenizer, EXAMPLES[0], 512)
    model = tiny_model(len(tokenizer))
    projected: list[int] = []
    model.lm_head.register_forward_hook(lambda _m, inputs, _o: projected.append(inputs[0].shape[1]))

    ours = target_loss(model, ids, labels, "cpu")
    own = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels])).loss

    targets = sum(1 for label in labels if label != IGNORE_INDEX)
    assert projected[0] == targets < len(ids), "the vocabulary projection of the target positions only"
    assert float(ours) == pytest.approx(float(own), rel=1e-5)
    with pytest.raises(ValueError, match="without target tokens"):
        target_loss(model, ids, [IGNORE_INDEX] * len(ids), "cpu")


def test_the_frozen_base_computes_in_bfloat16_and_the_adapters_train_in_float32(
    tokenizer: Any, tmp_path: Path
) -> None:
    encoded = [encode(tokenizer, e, 512) for e in EXAMPLES]
    model = tiny_model(len(tokenizer))
    options = TrainOptions(max_steps=6, learning_rate=1e-2, layers=1, weights="bfloat16")

    budget = train(model, encoded, tmp_path, options)

    params = dict(model.named_parameters())
    assert budget["dtype"] == "bfloat16"
    assert {p.dtype for n, p in params.items() if "lora_" in n} == {torch.float32}, "adapters in float32"
    assert {p.dtype for n, p in params.items() if "lora_" not in n} == {torch.bfloat16}
    assert {b.dtype for n, b in model.named_buffers() if "inv_freq" in n} == {torch.float32}, "rotary kept"
    log = [json.loads(line) for line in (tmp_path / TRAIN_LOG).read_text().splitlines()]
    assert len(log) == 6 and all(np.isfinite(r["loss"]) for r in log)
    assert compute_dtype("float32", "cpu") == torch.float32
    native = torch.ops.mkldnn._is_mkldnn_bf16_supported()
    assert compute_dtype("auto", "cpu") == (torch.bfloat16 if native else torch.float32)


@pytest.mark.slow
def test_a_few_lora_steps_lower_the_loss_and_write_the_log(tokenizer: Any, tmp_path: Path) -> None:
    encoded = [encode(tokenizer, e, 512) for e in EXAMPLES]
    model = tiny_model(len(tokenizer))
    options = TrainOptions(max_steps=24, learning_rate=1e-2, layers=1, save_every=10)
    budget = train(model, encoded, tmp_path, options)
    log = [json.loads(line) for line in (tmp_path / TRAIN_LOG).read_text().splitlines()]
    assert budget["steps"] == 24 and len(log) == 24
    first, last = np.mean([r["loss"] for r in log[:4]]), np.mean([r["loss"] for r in log[-4:]])
    assert last < first / 2
    assert all(r["peak_rss_mb"] > 0 and r["tokens"] > 0 for r in log)
    assert log[0]["lr"] == max(r["lr"] for r in log) > log[-1]["lr"] > 0, "the logged rate falls"
    assert (tmp_path / LOSS_CURVE).stat().st_size > 0 and (
        tmp_path / ADAPTER / "adapter_config.json"
    ).is_file()
    assert json.loads((tmp_path / BUDGET).read_text())["last_loss"] == log[-1]["loss"]
    lora_layers = {n.split(".layers.")[1].split(".")[0] for n, p in model.named_parameters() if "lora_" in n}
    assert lora_layers == {"1"}  # only the last layer


def test_a_run_keeps_its_adapter_every_n_steps_and_each_snapshot_merges(
    tokenizer: Any, tmp_path: Path
) -> None:
    encoded = [encode(tokenizer, e, 512) for e in EXAMPLES]
    options = TrainOptions(max_steps=5, learning_rate=5e-2, layers=1, keep_every=2)
    train(tiny_model(len(tokenizer)), encoded, tmp_path, options)

    assert snapshot_steps(tmp_path) == [2, 4]
    snapshot_dir(tmp_path, 6).with_name("step-00006.partial").mkdir()  # a save cut short
    assert snapshot_steps(tmp_path) == [2, 4], "a snapshot being written is not one"
    early = merged_weights(tiny_model(len(tokenizer)), snapshot_dir(tmp_path, 2))
    last = merged_weights(tiny_model(len(tokenizer)), tmp_path / ADAPTER)
    name = "model.layers.1.self_attn.q_proj.weight"
    assert not np.allclose(early[name], last[name]), "a snapshot is the adapter as it stood then"
    assert snapshot_steps(tmp_path / "elsewhere") == []

    later = merged_weights(tiny_model(len(tokenizer)), snapshot_dir(tmp_path, 4))
    both = merged_weights(tiny_model(len(tokenizer)), [snapshot_dir(tmp_path, 2), snapshot_dir(tmp_path, 4)])
    assert both.keys() == early.keys()
    for key in both:  # the average update, exactly: base + (ΔW₂ + ΔW₄) / 2
        assert np.allclose(both[key], (early[key] + later[key]) / 2, atol=1e-6), key


@pytest.mark.slow
def test_a_stopped_run_resumes_from_its_checkpoint(tokenizer: Any, tmp_path: Path) -> None:
    encoded = [encode(tokenizer, e, 512) for e in EXAMPLES]
    options = TrainOptions(max_steps=3, layers=1, save_every=1)
    train(tiny_model(len(tokenizer)), encoded, tmp_path, options)
    budget = train(tiny_model(len(tokenizer)), encoded, tmp_path, TrainOptions(max_steps=5, layers=1))
    steps = [json.loads(line)["step"] for line in (tmp_path / TRAIN_LOG).read_text().splitlines()]
    assert budget["steps"] == 5 and steps == [1, 2, 3, 4, 5]


def write_tiny_gguf(model: Any, path: Path) -> None:
    """The tiny model as a GGUF file (F32), the way llama.cpp's converter names Qwen2 tensors, with the
    hyperparameters its quantizer reads."""
    config = model.config
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, config.num_hidden_layers)
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    for name, tensor in model.state_dict().items():
        writer.add_tensor(names.get_name(name, try_suffixes=(".weight", ".bias")), tensor.numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.mark.slow
def test_export_writes_the_merged_weights_over_the_base_file(tokenizer: Any, tmp_path: Path) -> None:
    encoded = [encode(tokenizer, e, 512) for e in EXAMPLES]
    base_model = tiny_model(len(tokenizer))
    base = tmp_path / "base.gguf"
    write_tiny_gguf(base_model, base)
    train(
        tiny_model(len(tokenizer)),
        encoded,
        tmp_path / "run",
        TrainOptions(max_steps=4, learning_rate=5e-2, layers=1),
    )
    weights = merged_weights(tiny_model(len(tokenizer)), tmp_path / "run" / ADAPTER)
    assert set(weights) == {
        f"model.layers.1.{p}.weight"
        for p in (
            "self_attn.q_proj",
            "self_attn.k_proj",
            "self_attn.v_proj",
            "self_attn.o_proj",
            "mlp.gate_proj",
            "mlp.up_proj",
            "mlp.down_proj",
        )
    }
    out = tmp_path / "distilled.gguf"
    written = write_gguf(base, weights, out, "F32")
    assert "blk.1.attn_q.weight" in written["tensors_replaced"]
    reader, before = gguf.GGUFReader(str(out)), gguf.GGUFReader(str(base))
    tensors = {t.name: np.array(t.data) for t in reader.tensors}
    original = {t.name: np.array(t.data) for t in before.tensors}
    assert np.allclose(tensors["blk.1.attn_q.weight"], weights["model.layers.1.self_attn.q_proj.weight"])
    assert not np.allclose(tensors["blk.1.attn_q.weight"], original["blk.1.attn_q.weight"])
    assert np.array_equal(tensors["blk.0.attn_q.weight"], original["blk.0.attn_q.weight"])
    assert str(reader.fields["general.architecture"].contents()) == "qwen2"
    half = merged_weights(tiny_model(len(tokenizer)), tmp_path / "run" / ADAPTER, scale=0.5)
    start = tiny_model(len(tokenizer)).state_dict()
    for name, full in weights.items():  # WiSE-FT: halfway between the student and its fine-tuned self
        assert np.allclose(half[name], start[name].numpy() + 0.5 * (full - start[name].numpy()), atol=1e-6)
    with pytest.raises(ExportError, match="outside"):
        merged_weights(tiny_model(len(tokenizer)), tmp_path / "run" / ADAPTER, scale=1.5)
    with pytest.raises(ExportError, match="no GGUF tensor"):
        write_gguf(base, {"model.layers.1.unknown.weight": np.zeros((2, 2))}, tmp_path / "x.gguf")
    with pytest.raises(ExportError, match="no trained adapter"):
        merged_weights(tiny_model(len(tokenizer)), tmp_path / "nothing")


def tiny_q4_k_m(tokenizer: Any, tmp_path: Path) -> tuple[Any, Path]:
    """A tiny model and its GGUF file quantized by llama.cpp to Q4_K_M (32-wide rows: llama.cpp
    falls back from Q4_K / Q6_K to Q5_0 / Q8_0)."""
    pytest.importorskip("llama_cpp")
    from distill.export import requantize

    model = tiny_model(len(tokenizer))
    write_tiny_gguf(model, tmp_path / "f32.gguf")
    requantize(tmp_path / "f32.gguf", tmp_path / "q4_k_m.gguf", gguf.LlamaFileType.MOSTLY_Q4_K_M)
    return model, tmp_path / "q4_k_m.gguf"


def test_under_base_the_merged_tensors_land_in_the_base_files_own_quantization(
    tokenizer: Any, tmp_path: Path
) -> None:
    from distill.export import BASE

    model, base = tiny_q4_k_m(tokenizer, tmp_path)
    start = model.state_dict()["model.layers.1.self_attn.q_proj.weight"].numpy()
    moved = start + 0.25
    written = write_gguf(base, {"model.layers.1.self_attn.q_proj.weight": moved}, tmp_path / "out.gguf", BASE)
    assert written["file_type"] == "Q4_K_M"
    before, after = gguf.GGUFReader(str(base)), gguf.GGUFReader(str(tmp_path / "out.gguf"))
    types = {t.name: t.tensor_type for t in after.tensors}
    assert types == {t.name: t.tensor_type for t in before.tensors}
    assert types["blk.1.attn_q.weight"] == gguf.GGMLQuantizationType.Q5_0  # not the Q8_0 or F16 it went in as
    tensors = {t.name: t for t in after.tensors}
    q = tensors["blk.1.attn_q.weight"]
    read = gguf.quants.dequantize(q.data, q.tensor_type).reshape(moved.shape)
    assert np.abs(read - moved).mean() < np.abs(read - start).mean() / 4
    for t in before.tensors:
        if t.name != "blk.1.attn_q.weight":
            assert np.array_equal(np.asarray(tensors[t.name].data), np.asarray(t.data)), t.name
    assert not list(tmp_path.glob("*.partial"))


def test_by_default_a_small_trained_update_survives_the_export_that_the_base_quantization_erodes(
    tokenizer: Any, tmp_path: Path
) -> None:
    from distill.export import BASE

    model, base = tiny_q4_k_m(tokenizer, tmp_path)
    name, gguf_name = "model.layers.1.self_attn.q_proj.weight", "blk.1.attn_q.weight"
    start = model.state_dict()[name].numpy()
    # a LoRA-sized update: rank 1, 2 % of the weights' spread (a trained executor's adapter: 1-3 %)
    rng = np.random.default_rng(0)
    update = np.outer(rng.normal(size=start.shape[0]), rng.normal(size=start.shape[1])) * 0.02 * start.std()
    moved = (start + update).astype(np.float32)

    def kept(*qtype: str) -> float:
        """How much of the update the file written with ``qtype`` (none: the default) holds."""
        out = tmp_path / f"{'-'.join(qtype) or 'default'}.gguf"
        write_gguf(base, {name: moved}, out, *qtype)
        tensor = next(t for t in gguf.GGUFReader(str(out)).tensors if t.name == gguf_name)
        read = gguf.quants.dequantize(tensor.data, tensor.tensor_type).reshape(moved.shape)
        return float(np.corrcoef((read - start).ravel(), update.ravel())[0, 1])

    assert kept() > 0.9  # Q8_0 tensors: the update as trained
    assert kept(BASE) < 0.5  # requantized to the base's own types: mostly rounding noise


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--scale", "1.5"], "scale 1.5 is outside (0, 1]"),
        ([], "no trained adapter in"),
        (["--snapshot", "300"], "no snapshot at step 300"),
        (["--snapshot", "300", "100"], "no snapshot at step 100, 300"),
    ],
)
def test_export_says_what_is_wrong_in_one_line(
    options: list[str],
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from app.cli import main

    monkeypatch.setenv("AISEARCH_DISTILL_DIR", str(tmp_path))
    code = main(["distill", "export", "--student", str(tmp_path / "student.gguf"), *options])
    err = capsys.readouterr().err
    assert code == 2 and said in err and "Traceback" not in err


def test_the_train_command_trains_on_the_examples_it_is_given(
    tokenizer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import distill.student
    from app.cli import main
    from distill.reader import write_examples

    reader = [Example("q0#1", "reader", [{"role": "user", "content": "weather in Rome"}], "Rome")]
    write_examples(reader, tmp_path / "reader.jsonl")
    monkeypatch.setenv("AISEARCH_DISTILL_DIR", str(tmp_path / "distill"))
    monkeypatch.setattr(distill.student, "load_student", lambda path: (tiny_model(len(tokenizer)), tokenizer))

    args = ["--student", str(tmp_path / "x.gguf"), "--max-steps", "3", "--layers", "1", "-q"]
    code = main(["distill", "train", "--examples", str(tmp_path / "reader.jsonl"), *args])

    budget = json.loads((tmp_path / "distill" / "train" / BUDGET).read_text())
    assert code == 0 and budget["steps"] == 3 and budget["examples"] == 1, "no curated trajectory needed"
    assert main(["distill", "train", "--examples", str(tmp_path / "none.jsonl"), *args]) == 2
    assert "no examples at" in capsys.readouterr().err
