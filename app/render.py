"""How the CLI shows a run: progress events as they come, the plan as a tree, the answer and its sources."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from core.events import Event, PlanEvent
from core.state import Answer
from models.structured import PARTIAL_ENTITY, decode_entities


class ProgressPrinter:
    """Prints the run as it happens: route, plan tree, task start/finish, streamed answer."""

    def __init__(self, console: Console) -> None:
        """Print to ``console``."""
        self.console = console
        self.streamed = False
        self._message: str | None = None
        self._held = ""  # the start of a character reference split across tokens ("&#", "34", ";")

    def event(self, event: Event) -> None:
        """Render one custom stream event."""
        if event["event"] == "route":
            a = event["assessment"]
            self.console.print(
                f"[bold]route[/] {event['route']}  ({a['complexity']}, strategy {a['strategy']}, decided by "
                f"{a.get('decided_by', 'llm')}{', rule fallback' if a.get('fallback') else ''})"
                f" - {a.get('rationale', '')}"
            )
        elif event["event"] == "cache":
            self.console.print(
                f'[bold]cache[/] answered before: "{escape(event["query"])}" (similarity '
                f"{event['similarity']:.2f}, {age_text(event['age_s'])} old; the team took {event['saved_s']:.1f} s)"
            )
        elif event["event"] == "tools":
            self.console.print(f"[bold]tools[/] {', '.join(event['candidates']) or '(none)'}")
        elif event["event"] == "plan":
            self.console.print(plan_tree(event))
        elif event["event"] == "task_start":
            self.console.print(
                f"  [cyan]▶ {event['task_id']}[/] {event['goal']}  [dim]{event['tool'] or 'model'}[/]"
            )
        elif event["event"] == "task_end":
            colour = {"ok": "green", "incomplete": "yellow"}.get(event["status"], "red")
            detail = event.get("error") or event.get("output", "")
            self.console.print(
                f"  [{colour}]■ {event['task_id']} {event['status']}[/] in {event['seconds']:.1f}s"
                f"  [dim]{detail[:120]}[/]"
            )
        elif event["event"] == "tool_switch":
            self.console.print(
                f"  [yellow]↪ {event['task_id']}[/] {event['from_tool']} → backup {event['to_tool']}"
                f"  [dim]{event['reason'][:120]}[/]"
            )
        elif event["event"] == "review":
            self.console.print(f"[bold]review[/] {event['decision']}: {event['reason']}")

    def token(self, text: str, message: str | None = None) -> None:
        """Print a streamed answer token; a new ``message`` (the Writer's second turn, its reasons
        after the short answer) starts on a new line. Character references the model writes for
        quotes (``&#34;``) are printed decoded, also when they arrive in pieces."""
        if not self.streamed:
            self.console.print("[bold]answer[/]")
            self.streamed = True
        elif message != self._message:
            self.finish()
            self.console.print()
        self._message = message
        text = self._held + text
        partial = PARTIAL_ENTITY.search(text)
        self._held = partial.group(0) if partial else ""
        self._print(decode_entities(text[: partial.start()] if partial else text))

    def finish(self) -> None:
        """Print what is still held back once the stream has ended."""
        held, self._held = self._held, ""
        self._print(held)

    def _print(self, text: str) -> None:
        if text:
            self.console.print(text, end="", markup=False, highlight=False)


def age_text(seconds: float) -> str:
    """A duration in its largest whole unit: ``45 s``, ``12 min``, ``3 h``, ``2 d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f} {unit}"
    return f"{seconds:.0f} s"


def plan_tree(event: PlanEvent) -> Tree:
    """The plan as a tree of waves (tasks in one wave run in parallel)."""
    tasks = {task["id"]: task for task in event["tasks"]}
    label = (
        f"[bold]plan v{event['version']}[/] ({event['mode']}{', fallback' if event.get('fallback') else ''})"
    )
    tree = Tree(label)
    for index, wave in enumerate(event.get("waves", []), start=1):
        branch = tree.add(f"wave {index}" + (" (parallel)" if len(wave) > 1 else ""))
        for task_id in wave:
            task = tasks[task_id]
            deps = f" ← {', '.join(task['deps'])}" if task["deps"] else ""
            branch.add(f"{task_id}: {task['goal']} [dim]({task['tool'] or 'model'}){deps}[/]")
    return tree


def print_short(console: Console, answer: Answer) -> None:
    """The short answer, in bold, above the cited explanation (when the Writer gave one)."""
    short = answer.get("short") or ""
    if short and not answer.get("text", "").startswith(short):
        console.print(f"[bold]{escape(answer['short'])}[/]", highlight=False)


def print_answer(console: Console, answer: Answer, streamed: bool) -> None:
    """The answer (unless already streamed) and its numbered sources."""
    if streamed:
        console.print()
        if answer.get("attributed_citations") or answer.get("dropped_citations"):
            console.print("[bold]answer, with citations checked against the sources[/]")
            print_short(console, answer)
            console.print(answer["text"], markup=False, highlight=False)
    else:
        console.print("[bold]answer[/]" + (" [dim](from the cache)[/]" if answer.get("cached") else ""))
        print_short(console, answer)
        console.print(answer["text"], markup=False, highlight=False)
    cited = {c["n"] for c in answer["citations"]}
    if answer["sources"]:
        console.print("[bold]sources[/]")
        for source in answer["sources"]:
            mark = "" if source["n"] in cited else " [dim](not cited)[/]"
            note = (
                " [yellow](model knowledge, not a retrieved source)[/]" if source["kind"] == "model" else ""
            )
            console.print(
                f"  [{source['n']}] {source['title']} - {source['source']}{note}{mark}", highlight=False
            )
    elif answer["basis"] == "model_knowledge":
        console.print("[dim](answered from the model's own knowledge; no sources were consulted)[/]")
    for gap in answer.get("missing", []):
        console.print(f"[yellow]missing:[/] {gap}")
