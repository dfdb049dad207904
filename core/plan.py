"""The plan: a DAG of sub-tasks (seed 001 §3.4, Eq. 10), its validator and its scheduling helpers.

A plan is JSON like::

    {"tasks": [{"id": "t1", "goal": "Find Emperor Wu of Han's birth year", "tool": null,
                "args": {}, "deps": [], "returns": "birth year"},
               {"id": "t3", "goal": "Subtract", "tool": "python.calculate",
                "args": {"expression": "{{t1}} - {{t2.year}}"}, "deps": ["t1", "t2"], "returns": "years"}]}

Arguments may reference a parent's output as ``{{t1}}`` (the whole output) or ``{{t1.field}}`` (a
field of a JSON output); every referenced task must be a declared dependency.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import networkx as nx
from pydantic import BaseModel, Field, ValidationError, field_validator

from core.state import Evidence, TaskData, TaskPayload, TaskResult

REF_PATTERN = re.compile(r"\{\{\s*([A-Za-z_][\w-]*)(?:\.([\w.-]+))?\s*\}\}")
TASK_ID_PATTERN = re.compile(r"^[A-Za-z_][\w-]{0,31}$")


class PlanError(ValueError):
    """A plan failed validation; ``errors`` lists every problem found."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


class Task(BaseModel):
    """One atomic, schedulable sub-task: bound to at most one tool, or tool-free (``tool`` is null)."""

    id: str
    goal: str = Field(min_length=1)
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    deps: list[str] = Field(default_factory=list)
    returns: str = ""

    @field_validator("tool", mode="before")
    @classmethod
    def _blank_tool_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in {"", "none", "null"}:
            return None
        return value

    def declares_value(self) -> bool:
        """Whether the task says it returns a value (a year, a number, a name), not passages to read."""
        returns = self.returns.strip().lower()
        return bool(returns) and "passage" not in returns and "document" not in returns

    def references(self) -> set[str]:
        """Task ids referenced by ``{{tN…}}`` placeholders anywhere in the arguments or goal."""
        text = json.dumps(self.args, ensure_ascii=False) + " " + self.goal
        return {match.group(1) for match in REF_PATTERN.finditer(text)}


class Plan(BaseModel):
    """A DAG of tasks; ``version`` grows with every re-plan."""

    tasks: list[Task] = Field(default_factory=list)
    version: int = 1

    def by_id(self) -> dict[str, Task]:
        """Tasks keyed by id."""
        return {task.id: task for task in self.tasks}

    def graph(self) -> nx.DiGraph[str]:
        """The dependency graph, edges pointing from parent to child."""
        dag: nx.DiGraph[str] = nx.DiGraph()
        for task in self.tasks:
            dag.add_node(task.id)
            for dep in task.deps:
                dag.add_edge(dep, task.id)
        return dag

    def waves(self) -> list[list[str]]:
        """Task ids grouped by topological depth (tasks in one wave are independent)."""
        return [sorted(layer) for layer in nx.topological_generations(self.graph())]

    def descendants(self, task_id: str) -> set[str]:
        """Every task that depends, directly or not, on ``task_id``."""
        dag = self.graph()
        return set(nx.descendants(dag, task_id)) if task_id in dag else set()

    def ancestors(self, task_id: str) -> set[str]:
        """Every task ``task_id`` depends on, directly or not."""
        dag = self.graph()
        return set(nx.ancestors(dag, task_id)) if task_id in dag else set()

    def sinks(self) -> list[Task]:
        """The tasks no other task depends on, in plan order."""
        needed = {dep for task in self.tasks for dep in task.deps}
        return [task for task in self.tasks if task.id not in needed]

    def done(self, results: Mapping[str, TaskResult], augmented: Iterable[str] = ()) -> set[str]:
        """Ids of the tasks whose children may run: ok, or incomplete and settled (``augmented``:
        the Planner added downstream tasks that finish their work, or the Master's review read the
        result as it is)."""
        augmented = set(augmented)
        return {
            task.id
            for task in self.tasks
            if task.id in results
            and (
                results[task.id]["status"] == "ok"
                or (results[task.id]["status"] == "incomplete" and task.id in augmented)
            )
        }

    def ready(self, results: Mapping[str, TaskResult], augmented: Iterable[str] = ()) -> list[Task]:
        """Tasks not run yet whose dependencies are all done, in plan order."""
        return ready_tasks(self, self.done(results, augmented), set(results))


def current_plan(state: Mapping[str, Any]) -> Plan | None:
    """The plan of a state as a :class:`Plan` (None before one is written; it was validated then)."""
    data = state.get("plan")
    return Plan.model_validate(data) if data else None


def validate_plan(
    data: Any, *, candidate_tools: Iterable[str], max_tasks: int, known_ids: Iterable[str] = ()
) -> Plan:
    """Parse and check a plan: schema, unique ids, acyclic, known tools, declared references, size.

    Args:
        data: The plan as a dict (``{"tasks": [...]}``), a list of tasks, or a ``Plan``.
        candidate_tools: Tool names the plan may bind (the dynamic capability boundary).
        max_tasks: Upper bound on the number of tasks.
        known_ids: Ids of tasks outside this plan that it may depend on (kept tasks when re-planning).

    Raises:
        PlanError: With every problem found, phrased so a model can repair its output.
    """
    if isinstance(data, list):
        data = {"tasks": data}
    try:
        plan = data if isinstance(data, Plan) else Plan.model_validate(data)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()]
        raise PlanError([f"plan does not match the schema: {p}" for p in problems]) from exc
    errors: list[str] = []
    tools = set(candidate_tools)
    known = set(known_ids)
    ids = [task.id for task in plan.tasks]
    if not plan.tasks:
        errors.append("plan has no tasks")
    if len(plan.tasks) > max_tasks:
        errors.append(f"plan has {len(plan.tasks)} tasks; at most {max_tasks} are allowed")
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        errors.append(f"duplicate task ids: {duplicates}")
    for task in plan.tasks:
        if not TASK_ID_PATTERN.match(task.id):
            errors.append(f"task id {task.id!r} must be a short identifier such as 't1'")
        if task.tool is not None and task.tool not in tools:
            errors.append(
                f"task {task.id}: tool {task.tool!r} is not among the candidate tools {sorted(tools)}"
            )
        for dep in task.deps:
            if dep not in ids and dep not in known:
                errors.append(f"task {task.id}: dependency {dep!r} is not a task id")
            if dep == task.id:
                errors.append(f"task {task.id} depends on itself")
        for ref in task.references() - set(task.deps):
            errors.append(f"task {task.id}: references {{{{{ref}}}}} but {ref!r} is not in its deps")
    if not errors:
        dag = plan.graph()
        dag.remove_nodes_from(known - set(ids))
        if not nx.is_directed_acyclic_graph(dag):
            cycle = " -> ".join(edge[0] for edge in nx.find_cycle(dag))
            errors.append(f"the dependencies form a cycle: {cycle}")
    if errors:
        raise PlanError(errors)
    return plan


def _lookup(output: Any, path: str | None) -> Any:
    if path is None:
        return output
    value = output
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return output
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return output
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def substitute(value: Any, outputs: Mapping[str, Any]) -> Any:
    """Fill ``{{tN}}`` / ``{{tN.field}}`` placeholders in ``value`` with parents' outputs.

    A string that is exactly one placeholder takes the referenced value with its type; a
    placeholder inside a longer string is replaced by the value's text. A missing field falls
    back to the parent's whole output.
    """
    if isinstance(value, str):
        whole = REF_PATTERN.fullmatch(value.strip())
        if whole and whole.group(1) in outputs:
            return _lookup(outputs[whole.group(1)], whole.group(2))

        def repl(match: re.Match[str]) -> str:
            if match.group(1) not in outputs:
                return match.group(0)
            return _as_text(_lookup(outputs[match.group(1)], match.group(2)))

        return REF_PATTERN.sub(repl, value)
    if isinstance(value, dict):
        return {key: substitute(item, outputs) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, outputs) for item in value]
    return value


def ready_tasks(plan: Plan, done: set[str], started: set[str]) -> list[Task]:
    """Tasks not yet started whose dependencies have all completed successfully."""
    return [task for task in plan.tasks if task.id not in started and all(dep in done for dep in task.deps)]


def task_payload(
    task: Task,
    outputs: Mapping[str, Any],
    *,
    query: str,
    today: str,
    plan_version: int,
    tool_calls_left: int,
    deadline: float,
    candidates: Sequence[str] = (),
    goals: Mapping[str, str] | None = None,
    passages: Mapping[str, list[Evidence]] | None = None,
) -> TaskPayload:
    """The narrow input of one task's run: its parents' outputs filled into its arguments.

    Built the same way for a task the dispatcher sends as a ``Send`` branch and for one the
    Planner starts while its plan is still streaming (``agents/plan_stream.py``); ``candidates``
    are the run's candidate tools, where a call whose arguments fit one may go; ``goals`` are the
    earlier tasks' goals and ``passages`` the passages each read, by id (the parents' go with the
    payload).
    """
    filled = task.model_copy(update={"args": substitute(task.args, outputs)})
    payload = TaskPayload(
        task=cast(TaskData, filled.model_dump()),
        parent_outputs={dep: outputs[dep] for dep in task.deps if dep in outputs},
        query=query,
        today=today,
        plan_version=plan_version,
        tool_calls_left=tool_calls_left,
        deadline=deadline,
        candidates=list(candidates),
    )
    if goals:
        payload["parent_goals"] = {dep: goals[dep] for dep in task.deps if dep in goals}
    if passages:
        payload["parent_passages"] = {dep: passages[dep] for dep in task.deps if dep in passages}
    return payload
