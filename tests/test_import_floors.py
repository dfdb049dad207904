"""The floor plan holds: no module imports a package on a higher floor (tests are exempt).

Floors, top down: app > evals, bench > graph > agents > core > tools > models, prompts. A module may
import its own package and any lower floor; ``models`` and ``prompts`` share the bottom floor and
do not import each other, and neither do ``evals`` and ``bench``, except that the benchmarks reuse
the evaluation's data loaders and metrics (:data:`SIDEWAYS`). Every ``import``
statement counts, at module level or inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLOORS = {
    "app": 6,
    "evals": 5,
    "bench": 5,
    "graph": 4,
    "agents": 3,
    "core": 2,
    "tools": 1,
    "models": 0,
    "prompts": 0,
}

SIDEWAYS = {("bench", "evals")}  # allowed imports within a floor: (importer, imported)


def imported_packages(path: Path) -> list[tuple[int, str]]:
    """``(line, top-level package)`` of every absolute import of a project package in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.extend((node.lineno, name.split(".")[0]) for name in names if name.split(".")[0] in FLOORS)
    return found


def floor_violations(repo: Path = REPO) -> list[str]:
    """Every import that reaches a higher floor (or a sibling package on the same floor)."""
    problems = []
    for package, floor in FLOORS.items():
        for path in sorted((repo / package).rglob("*.py")):
            for line, target in imported_packages(path):
                if target != package and FLOORS[target] >= floor and (package, target) not in SIDEWAYS:
                    problems.append(
                        f"{path.relative_to(repo)}:{line} imports {target} (floor {package} -> {target})"
                    )
    return problems


def test_no_module_imports_a_higher_floor() -> None:
    assert floor_violations() == []


def test_relative_imports_are_not_used() -> None:
    relative = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for package in FLOORS
        for path in (REPO / package).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level
    ]
    assert relative == [], "relative imports would hide a floor crossing from the check"


def test_the_check_sees_a_crossing(tmp_path: Path) -> None:
    for package in FLOORS:
        (tmp_path / package).mkdir()
    (tmp_path / "core" / "bad.py").write_text("def f():\n    from agents.master import assess\n")
    (tmp_path / "agents" / "good.py").write_text("from core.state import SearchState\nimport tools.hub\n")
    assert floor_violations(tmp_path) == ["core/bad.py:2 imports agents (floor core -> agents)"]
