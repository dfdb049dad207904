"""The task that combines lookups: a comparison of dates or numbers settled in code, any other read
one entity at a time over each entity's own lookup, and a calculator handed words sent to the
executor model instead."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from agents.combine import combining_inputs, lookup_entity, settled_comparison, words_for_calculator
from agents.executor_search import SEARCHED_ONLY
from core.plan import Task
from tests.conftest import Team, make_settings, run
from tests.support.fakes import (
    EXEC_COMPUTE,
    EXEC_JUDGE,
    EXEC_SEARCH_JUDGE,
    MASTER,
    PLANNER,
    WRITER,
    ScriptedChatModel,
    assessment,
)
from tools.hub import ToolHub, ToolSpec

OLDER = "Who is older, Ernst Messerschmid or Philippe Perrin?"
CALCULATE = ToolSpec("python.calculate", "python", "Evaluate arithmetic.", {"properties": {"expression": {}}})
SEARCH = ToolSpec("docsearch.search", "docsearch", "Search.", {"properties": {"query": {}}})
COMBINE = Task(id="t3", goal="Compare the two birth dates", deps=["t1", "t2"])
ANSWER_FOR = "Answer for "  # the compare_entity prompt's last line


def reader_run(readings: dict[str, Any] | None = None) -> Any:
    """A run whose Writer model reads each entity as ``readings`` says (``ANSWER_FOR`` + name)."""
    reader = ScriptedChatModel()
    for entity, reply in (readings or {}).items():
        reader.on(f"{ANSWER_FOR}{entity}:", reply)
    specs = {spec.name: spec for spec in (CALCULATE, SEARCH)}
    return SimpleNamespace(tools=SimpleNamespace(specs=specs), model=lambda role: reader, reader=reader)


RUN = reader_run()


def payload(query: str, outputs: dict[str, str], goals: dict[str, str] | None = None) -> Any:
    return {"parent_outputs": outputs, "query": query, "parent_goals": goals or {}}


async def settled_task(run: Any, task: Task, given: Any) -> Any:
    """The task's outcome when it is a comparison its inputs settle, else None."""
    combining = combining_inputs(run, task, given)
    return None if combining is None else await settled_comparison(run, task, given["query"], *combining)


def passage(content: str, title: str = "") -> dict[str, str]:
    return {
        "id": content[:8],
        "kind": "document",
        "title": title,
        "source": "",
        "content": content,
        "task_id": "",
    }


async def test_a_comparison_of_two_looked_up_dates_is_settled_in_code() -> None:
    outputs = {
        "t1": "Ernst Messerschmid was born on May 21, 1945.",
        "t2": "Philippe Perrin was born on 26 January 1963.",
    }

    outcome = await settled_task(RUN, COMBINE, payload(OLDER, outputs))

    assert outcome is not None and outcome.status == "ok"
    assert outcome.output == "Ernst Messerschmid"
    (evidence,) = outcome.evidence
    assert "May 21, 1945" in evidence["content"] and "26 January 1963" in evidence["content"]
    younger = await settled_task(RUN, COMBINE, payload(OLDER.replace("older", "younger"), outputs))
    assert younger is not None and younger.output == "Philippe Perrin"


async def test_a_bare_value_is_matched_to_its_entity_by_the_goal_of_its_lookup() -> None:
    goals = {"t1": "Birth year of Philippe Perrin", "t2": "Birth year of Ernst Messerschmid"}

    outcome = await settled_task(RUN, COMBINE, payload(OLDER, {"t1": "1963", "t2": "1945"}, goals))

    assert outcome is not None and outcome.output == "Ernst Messerschmid"
    assert await settled_task(RUN, COMBINE, payload(OLDER, {"t1": "1963", "t2": "1945"})) is None, (
        "values that name no entity are not guessed by their order"
    )


async def test_a_value_no_passage_of_its_lookup_states_is_read_again_from_the_passages() -> None:
    # the 0.5B read "1833" for a man the passage says was born in 1974
    outputs = {"t1": "1966", "t2": "1833"}
    goals = {"t1": "Birth date of Carrie Akre", "t2": "Birth date of Shifty Shellshock"}
    passages = {
        "t1": [passage("Carrie Akre (born September 24, 1966) is an American musician.")],
        "t2": [passage("Seth Brooks Binzer (born August 23, 1974), better known as Shifty Shellshock.")],
    }
    question = "Who is older Carrie Akre or Shifty Shellshock?"
    misread = {**payload(question, outputs, goals), "parent_passages": passages}
    run = reader_run({"Carrie Akre": "September 24, 1966", "Shifty Shellshock": "August 23, 1974"})

    outcome = await settled_task(run, COMBINE, misread)

    assert outcome is not None and outcome.output == "Carrie Akre"
    assert outcome.compared == {
        "form": "earlier",
        "facts": {"Carrie Akre": "September 24, 1966", "Shifty Shellshock": "August 23, 1974"},
        "settled": "Carrie Akre",
    }
    (reading_t2,) = [call for call in run.reader.calls if "Shifty Shellshock:" in call.prompt]
    assert "Seth Brooks Binzer" in reading_t2.prompt and "Carrie Akre (born" not in reading_t2.prompt
    elsewhere = {
        "t1": passages["t1"],
        "t2": [passage("Thomas D. Singleton (1833–1888) was a Louisiana politician.")],
    }
    another_article = {**misread, "parent_passages": elsewhere}
    unread = reader_run()
    assert await settled_task(unread, COMBINE, another_article) is None, "1833 is another man's year"
    assert not unread.reader.calls, "a lookup that read nothing about the entity is not read for it"
    read = {**misread, "parent_outputs": {"t1": "1966", "t2": "1974"}}
    outcome = await settled_task(unread, COMBINE, read)
    assert outcome is not None and outcome.output == "Carrie Akre" and not unread.reader.calls, "in code"


@pytest.mark.parametrize(
    ("question", "readings", "answer"),
    [
        (
            "Which is a type of gun dog, the Labrador Retriever or the Tibetan Terrier?",
            {"Labrador Retriever": "yes", "Tibetan Terrier": "no"},
            "Labrador Retriever",
        ),
        (
            "Were both Labrador Retriever and Tibetan Terrier gun dogs?",
            {"Labrador Retriever": "yes", "Tibetan Terrier": "no"},
            "no",
        ),
        (
            "Were both Labrador Retriever and Tibetan Terrier dogs?",
            {"Labrador Retriever": "yes", "Tibetan Terrier": "yes"},
            "yes",
        ),
    ],
)
async def test_a_yes_no_comparison_is_read_one_entity_at_a_time_over_its_own_lookup(
    question: str, readings: dict[str, str], answer: str
) -> None:
    goals = {"t1": "Is the Labrador Retriever a gun dog?", "t2": "Is the Tibetan Terrier a gun dog?"}
    outputs = {"t1": "The Labrador Retriever is a gun dog.", "t2": "It is a companion dog."}
    passages = {
        "t1": [passage("The Labrador is a British breed of retriever gun dog.", "Labrador Retriever")],
        "t2": [passage("The Tibetan Terrier is a breed of dog from Tibet.", "Tibetan Terrier")],
    }
    run = reader_run(readings)

    outcome = await settled_task(
        run, COMBINE, {**payload(question, outputs, goals), "parent_passages": passages}
    )

    assert outcome is not None and outcome.status == "ok" and outcome.output == answer
    assert len(run.reader.calls) == 2
    terrier = next(call.prompt for call in run.reader.calls if "Tibetan Terrier:" in call.prompt)
    assert "breed of dog from Tibet" in terrier and "retriever gun dog" not in terrier, "its own lookup only"
    undecided = reader_run({"Labrador Retriever": "yes", "Tibetan Terrier": "yes"})
    choice = "Which is a type of gun dog, the Labrador Retriever or the Tibetan Terrier?"
    both_fit = {**payload(choice, outputs, goals), "parent_passages": passages}
    assert await settled_task(undecided, COMBINE, both_fit) is None, "two that fit settle no choice"
    down = reader_run(
        {
            "Labrador Retriever": "yes",
            "Tibetan Terrier": lambda p: (_ for _ in ()).throw(httpx.ConnectError("down")),
        }
    )
    assert await settled_task(down, COMBINE, both_fit) is None, "a failed reading leaves it to the executor"


async def test_what_the_inputs_do_not_settle_is_left_to_the_executor() -> None:
    two_years = {
        "t1": "Ernst Messerschmid was born in 1945 and flew in 1985.",
        "t2": "Philippe Perrin was born in 1963.",
    }
    assert await settled_task(RUN, COMBINE, payload(OLDER, two_years)) is None, "which year is compared?"
    same_year = {"t1": "Ernst Messerschmid: 1963", "t2": "Philippe Perrin: 1963"}
    assert await settled_task(RUN, COMBINE, payload(OLDER, same_year)) is None, "a tie settles nothing"
    actors = {"t1": "Peter Duffell is an English director.", "t2": "Fred Niblo is an American actor."}
    both = "Were both Peter Duffell and Fred Niblo actors?"
    assert await settled_task(RUN, COMBINE, payload(both, actors)) is None, "yes/no facts are the model's"
    searched = COMBINE.model_copy(update={"tool": "docsearch.search", "args": {"query": "x"}})
    dates = {"t1": "Ernst Messerschmid: 1945", "t2": "Philippe Perrin: 1963"}
    assert await settled_task(RUN, searched, payload(OLDER, dates)) is None, "a search is not a comparison"
    computed = COMBINE.model_copy(update={"tool": "python.calculate", "args": {"expression": "1945 - 1963"}})
    settled = await settled_task(RUN, computed, payload(OLDER, dates))
    assert settled is not None and settled.output == "Ernst Messerschmid", "a calculator's comparison, too"


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("Peter Duffell is an actor. == Fred Niblo is an American actor.", True),
        ("abs(actor - film director)", True),
        ("abs(actor - director)", True),
        ("abs(1945 - 1963)", False),
        ("sqrt(2) * pi", False),
        ("1,200 × 3", False),
    ],
)
def test_a_calculator_handed_words_is_told_apart_from_arithmetic(expression: str, words: bool) -> None:
    task = Task(id="t3", goal="Compare", tool="python.calculate", args={"expression": expression})

    assert words_for_calculator(RUN, task) is words
    searched = Task(id="t3", goal="Search", tool="docsearch.search", args={"query": expression})
    assert not words_for_calculator(RUN, searched)


QUESTION = "Which is older, the Kestrel Bridge or the Harrow Point lighthouse?"
PLAN = {
    "reasoning": "One lookup per entity, then the comparison.",
    "tasks": [
        {
            "id": "t1",
            "goal": "Year the Kestrel Bridge opened",
            "tool": "docsearch.search",
            "args": {"query": "Kestrel Bridge opened"},
        },
        {
            "id": "t2",
            "goal": "Year the Harrow Point lighthouse was built",
            "tool": "docsearch.search",
            "args": {"query": "Harrow Point lighthouse built"},
        },
        {"id": "t3", "goal": "Which is older", "tool": None, "args": {}, "deps": ["t1", "t2"]},
    ],
}


@pytest.mark.slow
async def test_a_planned_comparisons_lookups_stop_at_their_search_and_each_entity_is_read_once(
    docs_hub: ToolHub, fixture_index: Path
) -> None:
    team = Team()
    team["master"].on(MASTER, assessment("complex", "direct", resolved=QUESTION))
    team["planner"].on(PLANNER, PLAN)
    # what the 0.5B would say, were it asked to judge a lookup's passages or to compare
    team["executor"].on(
        EXEC_SEARCH_JUDGE, {"answer": "unclear", "sources": [1], "sufficient": False, "next_queries": ["x"]}
    )
    team["executor"].on(EXEC_COMPUTE, {"result": "", "complete": False})
    team["writer"].on(f"{ANSWER_FOR}Kestrel Bridge:", "1932").on(f"{ANSWER_FOR}Harrow Point", "1871")
    team["writer"].on(WRITER, "The Harrow Point lighthouse [1] is older than the Kestrel Bridge [2].")

    state, _, _ = await run(team.resources(docs_hub, make_settings()), QUESTION)

    results = state["results"]
    assert [results[t]["output"] for t in ("t1", "t2")] == [SEARCHED_ONLY, SEARCHED_ONLY]
    assert all(len(results[t]["tool_calls"]) <= 2 for t in ("t1", "t2")), (
        "one round each (plan's query, goal)"
    )
    assert not team["executor"].calls, "neither the lookups' passages nor the comparison went to the 0.5B"
    t3 = results["t3"]
    assert t3["status"] == "ok" and t3["compared"]["facts"] == {
        "Kestrel Bridge": "1932",
        "Harrow Point": "1871",
    }
    readings = [c.prompt for c in team["writer"].calls if ANSWER_FOR in c.prompt]
    assert len(readings) == 2, "each entity read once, where the comparison is made"
    bridge = next(p for p in readings if f"{ANSWER_FOR}Kestrel Bridge:" in p)
    assert "opened to traffic in 1932" in bridge and "Calder hills" not in bridge, "over its own lookup"
    assert state["plan"]["version"] == 1 and not state.get("replans"), "no re-plan"
    assert "Harrow Point" in state["answer"]["short"]


def test_a_lookup_stops_at_its_search_only_for_one_entity_of_a_comparison_read_entity_by_entity() -> None:
    assert lookup_entity(QUESTION, "Year the Kestrel Bridge opened") == "Kestrel Bridge"
    assert lookup_entity(QUESTION, "Kestrel Bridge and Harrow Point lighthouse dates") is None, "both named"
    assert lookup_entity(QUESTION, "Oldest bridges of the Ome") is None, "neither named"
    assert lookup_entity("When did the Kestrel Bridge open?", "Year the Kestrel Bridge opened") is None
    by_how_much = "Which is older, the Kestrel Bridge or the Harrow Point lighthouse, and by how many years?"
    assert lookup_entity(by_how_much, "Year the Kestrel Bridge opened") is None, "the calculator needs it"


CHOICE = "Which spans a river, the Kestrel Bridge or the Harrow Point?"
CHOICE_PLAN = {
    "reasoning": "One lookup per entity, then the choice.",
    "tasks": [
        {
            "id": "t1",
            "goal": "What is the Kestrel Bridge?",
            "tool": "docsearch.search",
            "args": {"query": "Kestrel Bridge"},
        },
        {
            "id": "t2",
            "goal": "What is Harrow Point?",
            "tool": "docsearch.search",
            "args": {"query": "Harrow Point river"},
        },
        {"id": "t3", "goal": "Which spans a river", "tool": None, "args": {}, "deps": ["t1", "t2"]},
    ],
}


@pytest.mark.slow
async def test_a_planned_choice_is_read_once_per_entity_and_the_writer_answers_from_it(
    docs_hub: ToolHub, fixture_index: Path
) -> None:
    team = Team()
    team["master"].on(MASTER, assessment("complex", "direct", resolved=CHOICE))
    team["planner"].on(PLANNER, CHOICE_PLAN)
    team["executor"].on(
        EXEC_SEARCH_JUDGE,
        lambda p: {
            "answer": "A steel arch bridge."
            if "Kestrel" in p.split("Task:")[-1]
            else "Where the Ome meets the sea.",
            "sources": [1],
            "sufficient": True,
            "next_queries": [],
        },
    )
    team["executor"].on(EXEC_COMPUTE, {"result": "", "complete": False})  # the 0.5B, were it asked
    team["master"].on(EXEC_JUDGE, {"sufficient": True, "result": "ok"})
    team["writer"].on(f"{ANSWER_FOR}Kestrel Bridge:", "yes").on(f"{ANSWER_FOR}Harrow Point:", "no")
    team["writer"].on(WRITER, "The Kestrel Bridge spans the river Ome [1].")

    state, _, _ = await run(team.resources(docs_hub, make_settings()), CHOICE)

    t3 = state["results"]["t3"]
    assert t3["status"] == "ok" and t3["output"] == "Kestrel Bridge"
    assert t3["compared"]["facts"] == {"Kestrel Bridge": "yes", "Harrow Point": "no"}
    assert not [c for c in team["executor"].calls if EXEC_COMPUTE in c.prompt], "the 0.5B was not asked"
    assert state["plan"]["version"] == 1 and not state.get("replans"), "no re-plan"
    readings = [c for c in team["writer"].calls if ANSWER_FOR in c.prompt]
    assert len(readings) == 2, "each entity read once, by the task; the Writer did not read them again"
    assert state["answer"]["short"] in ("Kestrel Bridge", "The Kestrel Bridge")  # as its article opens
