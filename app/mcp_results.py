"""What the MCP server's tools return (``app/mcp_server.py``): typed results, which FastMCP publishes
as each tool's output schema and sends as structured content, and the same results as readable text
for clients that show only the text; plus a one-line description of each progress event.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from core.events import Event


class AnswerSource(BaseModel):
    """A numbered source the Writer was shown."""

    n: int = Field(description="Its number, as the answer cites it: [n]")
    title: str
    source: str = Field(description="Where it comes from: a URL, a file, or mcp://server/tool")
    kind: str = Field(description="What it is: a document passage, a tool's result, or model knowledge")
    cited: bool = Field(description="Whether the answer cites it")
    published: str | None = Field(None, description="When a web page was published, as its source gives it")


class AskResult(BaseModel):
    """The answer to one question, with its short answer and its sources."""

    thread_id: str = Field(description="Pass it as thread_id to ask a follow-up in the same conversation")
    short: str = Field(description="The short answer (a phrase), shown first")
    answer: str = Field(description="The answer with its [n] citations")
    sources: list[AnswerSource]
    route: str | None = Field(None, description="The team that answered: writer_only, executor or planner")
    missing: list[str] = Field(default_factory=list, description="What could not be found or done")


class Passage(BaseModel):
    """One passage found by a search."""

    id: str
    title: str
    text: str
    score: float = Field(description="Its hybrid rank score (reciprocal rank fusion of BM25 and MiniLM)")
    source: str
    similarity: float | None = Field(None, description="MiniLM cosine to the query (0.5 and above: on topic)")


class SearchResult(BaseModel):
    """The passages a search found, best first."""

    query: str
    collection: str
    results: list[Passage]


def ask_result(thread_id: str, values: dict[str, Any]) -> AskResult:
    """The result of a finished turn from the thread's final state ``values``."""
    answer = values.get("answer") or {}
    cited = {citation["n"] for citation in answer.get("citations", [])}
    sources = [
        AnswerSource(
            n=source["n"],
            title=source.get("title", ""),
            source=source.get("source", ""),
            kind=source.get("kind", ""),
            cited=source["n"] in cited,
            published=source.get("published"),
        )
        for source in answer.get("sources", [])
    ]
    return AskResult(
        thread_id=thread_id,
        short=answer.get("short", ""),
        answer=answer.get("text", ""),
        sources=sources,
        route=values.get("route"),
        missing=list(answer.get("missing", [])),
    )


def ask_text(result: AskResult) -> str:
    """The answer as a person reads it: short answer, cited text, sources, what is missing, the thread."""
    lines = []
    if result.short and not result.answer.startswith(result.short):
        lines.append(result.short)
    lines.append(result.answer)
    if result.sources:
        lines += ["", "Sources:"]
        for source in result.sources:
            mark = "" if source.cited else " (not cited)"
            lines.append(f"[{source.n}] {source.title} - {source.source}{mark}")
    lines += [f"Missing: {gap}" for gap in result.missing]
    lines += ["", f"thread_id: {result.thread_id} (pass it to continue this conversation)"]
    return "\n".join(lines)


def search_result(found: dict[str, Any]) -> SearchResult:
    """The result of a document search (``DocSearch.search`` with ``full=True``)."""
    passages = [
        Passage(
            id=hit["id"],
            title=hit.get("title", ""),
            text=hit.get("text", hit.get("snippet", "")),
            score=hit["score"],
            source=hit.get("source", ""),
            similarity=hit.get("similarity"),
        )
        for hit in found["results"]
    ]
    return SearchResult(query=found["query"], collection=found["collection"], results=passages)


def search_text(result: SearchResult) -> str:
    """The passages as a person reads them: a numbered heading per passage, then its text."""
    if not result.results:
        return f"No passages found for {result.query!r} in collection {result.collection!r}."
    blocks = [
        f"[{i}] {p.title} ({p.source}, id {p.id}, score {p.score:.4f})\n{p.text}"
        for i, p in enumerate(result.results, start=1)
    ]
    return "\n\n".join(blocks)


def describe_event(event: Event) -> str:
    """One line saying what a progress event is (sent as an MCP progress message)."""
    if event["event"] == "route":
        return f"route {event['route']}"
    if event["event"] == "tools":
        return "tools " + ", ".join(event["candidates"])
    if event["event"] == "plan":
        return f"plan v{event['version']} with {len(event['tasks'])} tasks"
    if event["event"] == "task_start":
        return f"task {event['task_id']} started: {event['goal']}"
    if event["event"] == "task_end":
        return f"task {event['task_id']} {event['status']}"
    if event["event"] == "review":
        return f"review {event['decision']}: {event['reason']}"
    return "answer written"
