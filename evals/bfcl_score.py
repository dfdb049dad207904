"""Scoring as BFCL scores: its own ``ast_checker`` over the calls, or call / no call for relevance.

``bfcl_eval/eval_checker/ast_eval/ast_checker.py`` imports ``bfcl_eval.constants.model_config``,
which imports every model handler of the leaderboard and with them a dozen API clients. The
checker needs from it only whether a model's names had their dots turned into underscores; the
calls given to it here already carry BFCL's names, so that module is replaced by a stub that says
no. The checker and its real light imports (``constants.enums``, ``constants.type_mappings``, the
Java/JavaScript type converters) are loaded from their files under stand-in package modules that
are in ``sys.modules`` only while loading, so nothing named ``bfcl_eval`` stays imported.

Verdicts follow BFCL's eval runner: a task is right when the checker says valid; in a relevance
category when a call was made (``live_relevance``) or none was (``irrelevance``); an endpoint error
or timeout is wrong.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.bfcl_calls import Call
from evals.bfcl_data import BfclTask, wants_call
from evals.bfcl_fetch import BfclDataError

log = logging.getLogger(__name__)

MODEL_NAME = "aisearch"  # what the checker is told; only its (stubbed) name convention reads it
PACKAGES = (
    "bfcl_eval",
    "bfcl_eval.constants",
    "bfcl_eval.eval_checker",
    "bfcl_eval.eval_checker.ast_eval",
    "bfcl_eval.eval_checker.ast_eval.type_convertor",
)
MODULES = (
    "bfcl_eval.constants.enums",
    "bfcl_eval.constants.type_mappings",
    "bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter",
    "bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter",
)
CHECKER = "bfcl_eval.eval_checker.ast_eval.ast_checker"


@dataclass(frozen=True)
class _NameConvention:
    underscore_to_dot: bool = False


class _NoUnderscoreModels(dict[str, Any]):
    """Stands in for BFCL's ``MODEL_CONFIG_MAPPING``: every model keeps BFCL's dotted names."""

    def __missing__(self, key: str) -> _NameConvention:
        return _NameConvention()


def _module_path(root: Path, name: str) -> Path:
    return root.joinpath(*name.split(".")).with_suffix(".py")


def load_checker(root: Path) -> types.ModuleType:
    """BFCL's ``ast_checker`` module from an unpacked root (the folder holding ``bfcl_eval/``).

    Raises:
        BfclDataError: When a file is missing or does not load.
    """
    names = (*PACKAGES, *MODULES, "bfcl_eval.constants.model_config", CHECKER)
    saved = {name: sys.modules.get(name) for name in names}
    try:
        for name in PACKAGES:
            package = types.ModuleType(name)
            package.__path__ = [str(root.joinpath(*name.split(".")))]
            sys.modules[name] = package
        stub = types.ModuleType("bfcl_eval.constants.model_config")
        vars(stub)["MODEL_CONFIG_MAPPING"] = _NoUnderscoreModels()
        sys.modules[stub.__name__] = stub
        loaded: types.ModuleType | None = None
        for name in (*MODULES, CHECKER):
            path = _module_path(root, name)
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None or not path.is_file():
                raise BfclDataError(f"BFCL checker file missing: {path}")
            loaded = importlib.util.module_from_spec(spec)
            sys.modules[name] = loaded
            spec.loader.exec_module(loaded)
        assert loaded is not None
        return loaded
    except BfclDataError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of foreign code is a data problem here
        raise BfclDataError(f"BFCL's checker under {root} did not load: {exc}") from exc
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _language(checker: types.ModuleType, category: str) -> Any:
    """The checker's ``Language`` for a category (Java, JavaScript or Python, as BFCL decides)."""
    if "javascript" in category:
        return checker.Language.JAVASCRIPT
    if "java" in category:
        return checker.Language.JAVA
    return checker.Language.PYTHON


@dataclass
class Verdict:
    """Whether a task was done right, and BFCL's reason when not."""

    correct: bool
    error_type: str | None = None
    error: str | None = None


class Scorer:
    """Scores tasks; BFCL's checker is loaded on the first task that needs it."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._checker: types.ModuleType | None = None

    @property
    def checker(self) -> types.ModuleType:
        """BFCL's ``ast_checker`` module.

        Raises:
            BfclDataError: When no unpacked BFCL root was given or it does not load.
        """
        if self._checker is None:
            if self.root is None:
                raise BfclDataError("scoring calls needs BFCL's checker, and no BFCL root was given")
            self._checker = load_checker(self.root)
        return self._checker

    def score(self, task: BfclTask, calls: list[Call]) -> Verdict:
        """The verdict on ``calls`` (BFCL form, BFCL names) as the answer to ``task``."""
        if task.relevance_only:
            if wants_call(task.category):
                return Verdict(True) if calls else Verdict(False, "relevance_error:no_call", "no call made")
            if not calls:
                return Verdict(True)
            return Verdict(False, "irrelevance_error:called", f"called {[next(iter(c)) for c in calls]}")
        if not calls:
            return Verdict(False, "ast_decoder:no_call", "no function call in the reply")
        checker = self.checker
        try:
            result = checker.ast_checker(
                task.functions,
                calls,
                task.answer,
                _language(checker, task.category),
                task.category,
                MODEL_NAME,
            )
        except Exception as exc:  # noqa: BLE001 - the checker's own failure on odd output: a wrong answer
            return Verdict(False, "checker_error", f"{type(exc).__name__}: {exc}")
        if result.get("valid"):
            return Verdict(True)
        return Verdict(False, str(result.get("error_type")), _first_error(result.get("error")))


def _first_error(errors: Any) -> str:
    """The first of the checker's error messages, short."""
    if isinstance(errors, list) and errors:
        first = errors[0]
        return (first if isinstance(first, str) else str(first))[:300]
    return str(errors)[:300]
