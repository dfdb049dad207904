"""The local model server's own process: ``python -m models.server_launcher --config_file PATH``.

``models/local_server.py`` (the manager) starts this module detached. It runs llama-cpp-python's
server (``llama_cpp.server``) with two changes: every served model stays loaded (the stock proxy
unloads one model to load another whenever the requested alias changes) unless ``--swap-models``
is given, and the prompt cache is bounded by the bytes it really holds (``models/server_cache.py``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def make_models_resident() -> None:
    """Patch llama_cpp.server's LlamaProxy to load every model once and keep them all loaded."""
    from llama_cpp.server import model as proxy_module

    proxy_cls = proxy_module.LlamaProxy
    original_init = proxy_cls.__init__

    def __init__(self: Any, models: list[Any]) -> None:  # noqa: N807
        original_init(self, models)
        self._resident = {self._current_model_alias: self._current_model}
        for alias, model_settings in self._model_settings_dict.items():
            if alias not in self._resident:
                self._resident[alias] = self.load_llama_from_model_settings(model_settings)

    def __call__(self: Any, model: str | None = None) -> Any:  # noqa: N807
        alias = model if model in self._resident else self._default_model_alias
        self._current_model_alias, self._current_model = alias, self._resident[alias]
        return self._current_model

    def free(self: Any) -> None:
        for llama in self._resident.values():
            llama.close()
        self._resident.clear()

    proxy_cls.__init__ = __init__
    proxy_cls.__call__ = __call__
    proxy_cls.free = free


def serve_main(argv: list[str] | None = None) -> None:
    """Entry of the server process: ``python -m models.server_launcher --config_file PATH [--swap-models]``."""
    parser = argparse.ArgumentParser(prog="python -m models.server_launcher")
    parser.add_argument("--config_file", required=True)
    parser.add_argument(
        "--swap-models", action="store_true", help="stock behaviour: one model loaded at a time"
    )
    args = parser.parse_args(argv)
    if not args.swap_models:
        make_models_resident()
    from models.server_cache import install

    install()  # a prompt cache bounded by the bytes it really holds
    from llama_cpp.server.__main__ import main

    sys.argv = [sys.argv[0], "--config_file", args.config_file]
    main()


if __name__ == "__main__":
    serve_main()
