"""A plan never invents an identifier: a task whose tool needs an id another tool produces
(``docsearch.read`` needs a ``passage_id`` from ``docsearch.search``; ``tools/needs.py``) must run
after a task of that producer.

The check wires what it can and rejects the rest, so the Planner's repair round sees why:

* the task already runs after a producer task (directly or not): kept;
* exactly one producer task could precede it without closing a cycle: added to its ``deps``;
* none, or several to choose from: a :class:`core.plan.PlanError` that says which task to add or name.

An identifier the plan wrote as a literal (not a ``{{tN…}}`` reference) is dropped from the task's
arguments, so the executor writes it from the producer's output instead of using a made-up one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import networkx as nx

from core.plan import REF_PATTERN, Plan, PlanError, Task


def needs_of(candidates: Sequence[Mapping[str, object]]) -> dict[str, dict[str, str]]:
    """Tool name -> ``{identifier input: producing tool}`` of every candidate that needs one."""
    found: dict[str, dict[str, str]] = {}
    for tool in candidates:
        needs = tool.get("needs")
        if isinstance(needs, Mapping) and needs:
            found[str(tool["name"])] = {str(k): str(v) for k, v in needs.items()}
    return found


def _invented(value: object) -> bool:
    """Whether an argument value is a literal the plan wrote (no reference to a task's output)."""
    return value not in (None, "", []) and not REF_PATTERN.search(str(value))


def wire_id_dependencies(
    tasks: list[Task], needs: Mapping[str, Mapping[str, str]], kept: Sequence[Task] = ()
) -> list[Task]:
    """``tasks`` with every id-consuming task after a producer task (see the module docstring).

    Args:
        tasks: The new tasks of the plan.
        needs: Tool -> its identifier inputs and their producers (:func:`needs_of`).
        kept: Tasks kept from an earlier plan (a completed search counts as a producer).

    Raises:
        PlanError: When a consumer has no producer task to run after, or several to choose from.
    """
    every = [*kept, *tasks]
    dag = Plan(tasks=every).graph()
    errors: list[str] = []
    fixed: list[Task] = []
    for task in tasks:
        wanted = needs.get(task.tool or "", {})
        deps = list(task.deps)
        args = dict(task.args)
        for argument, producer in wanted.items():
            producers = [t.id for t in every if t.tool == producer and t.id != task.id]
            if nx.ancestors(dag, task.id) & set(producers):
                pass
            else:
                acyclic = [p for p in producers if not nx.has_path(dag, task.id, p)]
                if len(acyclic) == 1:
                    deps.append(acyclic[0])
                    dag.add_edge(acyclic[0], task.id)
                elif not acyclic:
                    errors.append(
                        f"task {task.id}: {task.tool} needs {argument} from {producer}: add a task that "
                        f"calls {producer} and list it in deps (never write an id yourself)"
                    )
                else:
                    errors.append(
                        f"task {task.id}: {task.tool} needs {argument} from {producer}: list the "
                        f"{producer} task ({', '.join(acyclic)}) whose result it reads in deps"
                    )
            if _invented(args.get(argument)):
                del args[argument]
        changed = deps != task.deps or args != task.args
        fixed.append(task.model_copy(update={"deps": deps, "args": args}) if changed else task)
    if errors:
        raise PlanError(errors)
    return fixed
