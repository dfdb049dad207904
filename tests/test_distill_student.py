"""The dequantized student saved beside its GGUF file is read again only for that very file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from distill.student import save_model, saved_model, saved_model_dir


class Config:
    """A model configuration as ``transformers`` gives it for a GGUF file."""

    def to_dict(self) -> dict[str, Any]:
        return {"model_type": "qwen2", "quantization_config": {"quant_method": "gguf"}}


class TinyModel(torch.nn.Linear):
    """A real module with a configuration: what ``save_model`` reads of a model."""

    def __init__(self) -> None:
        super().__init__(2, 2)
        self.config = Config()


def test_a_saved_student_serves_its_own_gguf_only(tmp_path: Path) -> None:
    gguf = tmp_path / "student.gguf"
    gguf.write_bytes(b"GGUF" + bytes(100))
    assert saved_model(gguf) is None
    save_model(TinyModel(), gguf)
    folder = saved_model(gguf)
    assert folder == saved_model_dir(gguf) and not (tmp_path / "student.hf.partial").exists()
    assert json.loads((folder / "config.json").read_text()) == {"model_type": "qwen2"}  # no GGUF marker
    assert (folder / "model.safetensors").stat().st_size > 0
    stat = gguf.stat()
    os.utime(gguf, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # the file was replaced
    assert saved_model(gguf) is None


class FullDisk(TinyModel):
    """A model whose weights cannot be written."""

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("No space left on device")


def test_a_failed_save_leaves_nothing_half_written(tmp_path: Path) -> None:
    gguf = tmp_path / "student.gguf"
    gguf.write_bytes(b"GGUF")
    save_model(FullDisk(), gguf)  # logged, not raised: only the next load's speed is lost
    assert saved_model(gguf) is None and list(tmp_path.iterdir()) == [gguf]
