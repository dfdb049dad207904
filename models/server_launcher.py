"""The local model server's own process: ``python -m models.server_launcher --config_file PATH``.

``models/local_server.py`` (the manager) starts this module detached. It runs llama-cpp-python's
server (``llama_cpp.server``) with two changes: every served model stays loaded (the stock proxy
unloads one model to load another whenever the requested alias changes) unless ``--swap-models``
is given, the prompt cache is bounded by the bytes it really holds (``models/server_cache.py``),
and with ``--idle-minutes N`` it exits after N minutes without a request (``models/idle_http.py``),
so a server nobody uses gives its memory back; the manager starts a new one on the next run.
"""

from __future__ import annotations

import argparse
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

    # patched in place: llama_cpp.server holds the class itself, so a subclass would not be used
    proxy_cls.__init__ = __init__  # type: ignore[method-assign]
    proxy_cls.__call__ = __call__  # type: ignore[method-assign]
    proxy_cls.free = free  # type: ignore[method-assign]


def serve_main(argv: list[str] | None = None) -> None:
    """Entry of the server process: ``python -m models.server_launcher --config_file PATH [...]``."""
    parser = argparse.ArgumentParser(prog="python -m models.server_launcher")
    parser.add_argument("--config_file", required=True)
    parser.add_argument(
        "--swap-models", action="store_true", help="stock behaviour: one model loaded at a time"
    )
    parser.add_argument(
        "--idle-minutes", type=float, default=0.0, help="exit after this long without a request (0: never)"
    )
    args = parser.parse_args(argv)
    if not args.swap_models:
        make_models_resident()
    from models.server_cache import install

    install()  # a prompt cache bounded by the bytes it really holds
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ConfigFileSettings, ServerSettings

    with open(args.config_file, "rb") as handle:
        config = ConfigFileSettings.model_validate_json(handle.read())
    server = ServerSettings.model_validate(config)
    app = create_app(server_settings=server, model_settings=config.models)
    if args.idle_minutes > 0:
        import anyio

        from models.idle_http import serve_until_idle

        anyio.run(
            lambda: serve_until_idle(
                app, host=server.host, port=server.port, idle_s=args.idle_minutes * 60, log_level="info"
            )
        )
    else:
        import uvicorn

        uvicorn.run(app, host=server.host, port=server.port)


if __name__ == "__main__":
    serve_main()
