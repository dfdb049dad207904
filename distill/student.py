"""The student the distillation trains: the executor's GGUF file loaded by ``transformers`` as a
float32 model, and the copies that spare later runs the slow part of that load.

Reading a GGUF file in ``transformers`` parses its whole tokenizer vocabulary (151,936 tokens for
Qwen2.5) twice, once for the configuration and once for the weights: about 35 of the 50 s a load
takes on 2 cores, for the 8 s the dequantizing itself costs. So the first load saves the dequantized
model beside the GGUF file (``<models>/<file stem>.hf/``, safetensors, 2.4 GB for the 0.5B in
float32, exactly the dequantized values) and the tokenizer (``<file stem>.tokenizer/``); later loads
(``distill train``, then ``distill export``) read those in a few seconds. A saved model carries the
size and modification time of the GGUF file it came from and is not used for another.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SOURCE = "source.json"


def _source_of(gguf_path: Path) -> dict[str, int]:
    stat = gguf_path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def saved_model_dir(gguf_path: Path) -> Path:
    """Where the dequantized copy of ``gguf_path`` is kept."""
    return gguf_path.with_name(gguf_path.stem + ".hf")


def saved_model(gguf_path: Path) -> Path | None:
    """The dequantized copy of ``gguf_path`` when one was saved from this very file, else None."""
    folder = saved_model_dir(gguf_path)
    try:
        source = json.loads((folder / SOURCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return folder if source == _source_of(gguf_path) and (folder / "config.json").is_file() else None


def save_model(model: Any, gguf_path: Path) -> None:
    """Keep ``model`` (dequantized from ``gguf_path``) beside the file, written whole or not at all;
    a failure to write only costs the next load its speed."""
    from safetensors.torch import save_model as save_file

    folder = saved_model_dir(gguf_path)
    partial = folder.with_name(folder.name + ".partial")
    try:
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        # ``save_pretrained`` refuses a model loaded from GGUF: its weights and its configuration
        # (without the GGUF marker) are written as a plain float32 checkpoint instead
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        (partial / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        save_file(model, str(partial / "model.safetensors"))
        (partial / SOURCE).write_text(json.dumps(_source_of(gguf_path)), encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    except (OSError, ValueError, RuntimeError) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        log.warning("the dequantized student was not saved (%s); the next load reads the GGUF again", exc)


def load_student(gguf_path: Path, *, with_tokenizer: bool = True) -> tuple[Any, Any]:
    """The model (float32, dequantized) and tokenizer (None unless asked) of a Qwen2 GGUF file.

    Raises:
        FileNotFoundError: When the file is missing.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not gguf_path.is_file():
        raise FileNotFoundError(f"no student GGUF at {gguf_path}: run `aisearch models assemble`")
    tokenizer = None
    if with_tokenizer:
        saved = gguf_path.with_name(gguf_path.stem + ".tokenizer")
        if (saved / "tokenizer_config.json").is_file():
            tokenizer = AutoTokenizer.from_pretrained(str(saved))
        else:
            tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
            tokenizer.save_pretrained(str(saved))
    folder = saved_model(gguf_path)
    if folder is not None:
        return AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32), tokenizer
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32
    )
    save_model(model, gguf_path)
    return model, tokenizer
