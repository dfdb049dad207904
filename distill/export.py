"""``aisearch distill export``: the trained adapter merged into the executor's GGUF file.

The LoRA adapter is merged into the dequantized student (``peft`` ``merge_and_unload``); the weights it
changed are written over the base GGUF file's tensors of the same name (``gguf``'s reader and writer,
names mapped by ``gguf``'s own HF-to-GGUF tensor map), and every other tensor and all metadata
(tokenizer, chat template) are copied byte for byte. The merged tensors land in the base file's own
quantization by default (``base``): each in the type of the tensor it replaces where ``gguf`` can
write it (F32, F16, Q8_0), otherwise (the K-quants of a ``Q4_K_M`` file) as F16 that llama.cpp's own
quantizer then brings to the base's file type, copying the tensors already of the type it picks.
A student read at another precision than its base pays for it on every prompt: Q8_0 tensors in a
Q4_K_M file read prompts about 1.5× slower on this CPU. ``Q8_0``, ``F16`` or ``F32`` keep every
merged tensor at that type instead. The result is one GGUF file llama.cpp loads like the bundled
models, written atomically, with a manifest ``<file>.json`` (sha256, base, adapter, scale, tensors
replaced, the quantization written).

``scale`` interpolates between the student and its fine-tuned self before the merge: the weights
become ``W + scale · ΔW`` (weight-space ensembling, WiSE-FT, Wortsman et al. 2022: a fine-tuned
model mixed back towards its base keeps much of the gain where it was trained and loses less of
what the base did elsewhere). 1 is the adapter as trained.

Several adapters (snapshots of one run) merge as their average update, ``ΔW = mean(B_i A_i)``
(checkpoint averaging along a trajectory, as in stochastic weight averaging, Izmailov et al.
2018): exact, through ``peft``'s ``add_weighted_adapter`` with ``combination_type="cat"``. A run at
a constant rate wanders between steps; the average of its late snapshots is the flatter point.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from models.config_files import write_json_atomically
from models.distilled import manifest_path

log = logging.getLogger(__name__)

BASE = "base"  # merged tensors in the base file's own quantization
QTYPES: tuple[str, ...] = (BASE, "Q8_0", "F16", "F32")
# Q8_0 keeps what training moved: requantized to a Q4_K_M base's own types, a LoRA update (1-3 % of
# a weight's spread) mostly drowns in the quantization step, and the same trained executor scored
# 53 % on BFCL's dev split against 70 % with Q8_0 tensors (docs/results.md).
# BASE reads prompts faster (Q8_0 tensors in the 1.5B: about 1.5x slower).
DEFAULT_QTYPE = "Q8_0"
WRITABLE = ("F32", "F16", "Q8_0")  # the tensor types ``gguf``'s Python writer quantizes to


class ExportError(ValueError):
    """The adapter, the base file or an option cannot make a distilled GGUF file (bad input: the
    command says so in one line)."""


AVERAGED = "averaged"  # the name of the adapter several snapshots merge into


def _adapter_list(adapters: Path | Sequence[Path]) -> list[Path]:
    """One adapter folder or several, as a list."""
    return [adapters] if isinstance(adapters, Path) else list(adapters)


def _check(adapters: Sequence[Path], scale: float) -> None:
    """Raise :class:`ExportError` unless every folder of ``adapters`` holds an adapter (there is at
    least one) and ``scale`` is in (0, 1]."""
    if not 0 < scale <= 1:
        raise ExportError(f"scale {scale} is outside (0, 1]: 1 merges the adapter as trained")
    if not adapters:
        raise ExportError("no adapter to merge")
    for adapter_dir in adapters:
        if not (adapter_dir / "adapter_config.json").is_file():
            raise ExportError(f"no trained adapter in {adapter_dir}: run `aisearch distill train` first")


def merged_weights(model: Any, adapters: Path | Sequence[Path], scale: float = 1.0) -> dict[str, np.ndarray]:
    """The weights the adapter changes, merged with its update times ``scale`` (HF names such as
    ``model.layers.3.mlp.up_proj.weight``); several adapters merge as their average update.

    Raises:
        ExportError: When a folder holds no adapter, or ``scale`` is outside (0, 1].
    """
    from peft import PeftModel

    adapters = _adapter_list(adapters)
    _check(adapters, scale)
    names = [f"snapshot{n}" for n in range(len(adapters))]
    peft_model = PeftModel.from_pretrained(model, str(adapters[0]), adapter_name=names[0])
    for name, adapter_dir in zip(names[1:], adapters[1:], strict=True):
        peft_model.load_adapter(str(adapter_dir), adapter_name=name)
    if len(adapters) > 1:
        mean = [1 / len(adapters)] * len(adapters)
        peft_model.add_weighted_adapter(names, mean, AVERAGED, combination_type="cat")
        peft_model.set_adapter(AVERAGED)
    layers = [
        (name, module)
        for name, module in peft_model.named_modules()
        if hasattr(module, "lora_A") and module.lora_A
    ]
    for _, module in layers:
        module.scale_layer(scale)
    changed = [name for name, _ in layers]
    merged = peft_model.merge_and_unload()
    state = merged.state_dict()
    weights = {}
    for name in changed:
        key = name.split("base_model.model.", 1)[-1] + ".weight"
        weights[key] = state[key].detach().float().numpy()
    return weights


def _encode(array: np.ndarray, qtype: str) -> tuple[np.ndarray, Any]:
    """``array`` as ``qtype`` (one of :data:`WRITABLE`) and the raw type to declare (None: numpy's)."""
    import gguf

    if qtype == "F32":
        return array.astype(np.float32), None
    if qtype == "F16":
        return array.astype(np.float16), None
    kind = gguf.GGMLQuantizationType.Q8_0
    return gguf.quants.quantize(array.astype(np.float32), kind), kind


def _target(qtype: str, replaced_type: Any) -> str:
    """The type a merged tensor is written in: ``qtype``, or under ``base`` the type of the tensor it
    replaces when ``gguf`` writes that, else F16 for llama.cpp's quantizer to finish."""
    if qtype != BASE:
        return qtype
    return replaced_type.name if replaced_type.name in WRITABLE else "F16"


def requantize(source: Path, out: Path, file_type: int) -> None:
    """``source`` quantized by llama.cpp (``llama_model_quantize``) into ``file_type`` (a
    ``gguf.LlamaFileType``): tensors already of the type it picks are copied, others converted.

    Raises:
        ExportError: When llama.cpp refuses the file.
    """
    import llama_cpp
    from llama_cpp import _logger

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = file_type
    params.allow_requantize = True  # the merged file's untouched tensors are quantized already
    params.nthread = os.cpu_count() or 1
    level = _logger.logger.level
    _logger.logger.setLevel(logging.ERROR)  # one line per tensor otherwise
    try:
        status = llama_cpp.llama_model_quantize(str(source).encode(), str(out).encode(), params)
    finally:
        _logger.logger.setLevel(level)
    if status != 0:
        raise ExportError(f"llama.cpp could not quantize {source} to file type {file_type} (status {status})")


def write_gguf(
    base: Path, weights: dict[str, np.ndarray], out: Path, qtype: str = DEFAULT_QTYPE
) -> dict[str, Any]:
    """``base`` with the tensors of ``weights`` (HF names) replaced, written to ``out``.

    Raises:
        ExportError: On an unknown qtype, a weight without a tensor in ``base``, a shape mismatch, or
            a base that does not say its file type when its tensors need llama.cpp's quantizer.
    """
    import gguf

    if qtype not in QTYPES:
        raise ExportError(f"unknown qtype {qtype!r} (choose from {', '.join(QTYPES)})")
    reader = gguf.GGUFReader(str(base))
    arch_name = str(reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
    arch = next((a for a, n in gguf.MODEL_ARCH_NAMES.items() if n == arch_name), None)
    blocks = int(reader.fields[f"{arch_name}.block_count"].contents())
    if arch is None:
        raise ExportError(f"{base}: unknown architecture {arch_name!r}")
    names = gguf.get_tensor_name_map(arch, blocks)
    replaced: dict[str, np.ndarray] = {}
    for hf_name, array in weights.items():
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ExportError(f"no GGUF tensor for {hf_name}")
        replaced[name] = array
    tensors = {t.name: t for t in reader.tensors}
    for name, array in replaced.items():
        if name not in tensors:
            raise ExportError(f"{base} has no tensor {name}")
        if tuple(int(d) for d in tensors[name].shape) != tuple(reversed(array.shape)):
            raise ExportError(f"{name}: shape {array.shape} does not fit {tuple(tensors[name].shape)}")
    targets = {name: _target(qtype, tensors[name].tensor_type) for name in replaced}
    file_type = None
    if qtype == BASE and any(targets[name] != tensors[name].tensor_type.name for name in replaced):
        field = reader.fields.get(gguf.Keys.General.FILE_TYPE)
        if field is None:
            raise ExportError(f"{base} does not say its file type: choose --qtype Q8_0, F16 or F32")
        file_type = gguf.LlamaFileType(int(field.contents()))
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    merged = out.with_name(out.name + ".merged.partial") if file_type is not None else partial
    writer = gguf.GGUFWriter(str(merged), arch_name, endianess=reader.endianess)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    encoded = {name: _encode(array, targets[name]) for name, array in replaced.items()}
    for tensor in reader.tensors:
        if tensor.name in encoded:
            data, raw = encoded[tensor.name]
            writer.add_tensor_info(tensor.name, data.shape, data.dtype, data.nbytes, raw)
        else:
            writer.add_tensor_info(
                tensor.name, tensor.data.shape, tensor.data.dtype, tensor.data.nbytes, tensor.tensor_type
            )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor in reader.tensors:
        data = encoded[tensor.name][0] if tensor.name in encoded else tensor.data
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
    writer.close()
    if file_type is not None:
        try:
            requantize(merged, partial, file_type)
        finally:
            merged.unlink(missing_ok=True)
    partial.replace(out)
    return {
        "tensors_replaced": sorted(replaced),
        "qtype": qtype,
        "file_type": file_type.name.removeprefix("MOSTLY_") if file_type is not None else None,
    }


def sha256_of(path: Path) -> str:
    """The file's sha256, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def export(
    base: Path, adapters: Path | Sequence[Path], out: Path, qtype: str = DEFAULT_QTYPE, scale: float = 1.0
) -> dict[str, Any]:
    """Merge the adapter (its update times ``scale``; several: their average) into the base GGUF's
    student and write ``out`` with its manifest."""
    from distill.student import load_student

    adapters = _adapter_list(adapters)
    _check(adapters, scale)  # before the student is loaded
    started = time.perf_counter()
    model, _ = load_student(base, with_tokenizer=False)
    written = write_gguf(base, merged_weights(model, adapters, scale), out, qtype)
    manifest = {
        "file": str(out),
        "sha256": sha256_of(out),
        "bytes": out.stat().st_size,
        "base": str(base),
        "adapter": str(adapters[0]) if len(adapters) == 1 else [str(a) for a in adapters],
        "qtype": qtype,
        "file_type": written["file_type"],
        "scale": scale,
        "tensors_replaced": len(written["tensors_replaced"]),
        "seconds": round(time.perf_counter() - started, 1),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_json_atomically(manifest_path(out), manifest)
    return manifest
