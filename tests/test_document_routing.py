"""Retrieval-aware routing: the Master searches the local documents before answering from memory
when a probe search with the question finds them on topic (real docsearch over the fixture corpus)."""

from __future__ import annotations

import pytest

from tests.conftest import Team, make_settings, run
from tests.support.fakes import (
    EXEC_ARGS,
    EXEC_JUDGE,
    EXEC_SEARCH_JUDGE,
    EXEC_SUBQUERIES,
    MASTER,
    WRITER,
    assessment,
)
from tools.hub import ToolHub

ON_TOPIC = "Who built the Harrow Point lighthouse?"
OFF_TOPIC = "What is the name of Emperor Han-Wu?"


@pytest.mark.slow
async def test_a_simple_question_the_documents_cover_is_searched(team: Team, docs_hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("simple", resolved=ON_TOPIC))
    team["executor"].on(EXEC_SUBQUERIES, {"queries": ["Harrow Point lighthouse builder"]})
    team["executor"].on(
        EXEC_SEARCH_JUDGE,
        {"answer": "Miriam Calloway", "sources": [1], "sufficient": True, "next_queries": []},
    )
    team["writer"].on(WRITER, "It was built by Miriam Calloway [1].")

    state, path, _ = await run(team.resources(docs_hub), ON_TOPIC)

    probe = state["assessment"]["probe"]
    assert state["assessment"]["escalated"] == "documents" and state["route"] == "executor"
    assert probe["tool"] == "docsearch.search" and probe["similarity"] >= 0.45
    assert probe["title"] == "The Harrow Point Lighthouse"
    assert state["candidate_tools"][0]["name"] == "docsearch.search", "the probed tool is searched first"
    assert state["answer"]["citations"][0]["title"] == "The Harrow Point Lighthouse"
    assert path[:2] == ["master", "select_tools"]


@pytest.mark.slow
async def test_a_question_the_documents_do_not_cover_stays_writer_only(team: Team, docs_hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("simple", resolved=OFF_TOPIC))
    team["writer"].on(WRITER, "Emperor Wu of Han, born Liu Che.")

    state, path, _ = await run(team.resources(docs_hub), OFF_TOPIC)

    assert state["route"] == "writer_only" and state["assessment"]["escalated"] is None
    assert state["assessment"]["probe"]["similarity"] < 0.45, "the probe ran and found nothing on topic"
    assert path == ["master", "writer"]


@pytest.mark.slow
async def test_the_probe_can_be_turned_off(team: Team, docs_hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("simple", resolved=ON_TOPIC))
    team["writer"].on(WRITER, "Miriam Calloway.")
    settings = make_settings()
    settings.document_probe_similarity = 1.0

    state, _, _ = await run(team.resources(docs_hub, settings), ON_TOPIC)

    assert state["route"] == "writer_only" and state["assessment"]["probe"] is None


@pytest.mark.slow
async def test_search_tools_without_similarities_leave_the_route_alone(team: Team, hub: ToolHub) -> None:
    team["master"].on(MASTER, assessment("simple", resolved="When was Emperor Wu of Han born?"))
    team["writer"].on(WRITER, "In 156 BC.")

    state, _, _ = await run(team.resources(hub), "When was Emperor Wu of Han born?")

    assert state["route"] == "writer_only" and state["assessment"]["probe"] is None


@pytest.mark.slow
async def test_a_factual_question_on_the_documents_topic_is_never_answered_from_memory(
    team: Team, docs_hub: ToolHub
) -> None:
    team["master"].on(MASTER, assessment("simple", resolved=ON_TOPIC))
    team["executor"].on(EXEC_SUBQUERIES, {"queries": ["Harrow Point lighthouse builder"]})
    team["executor"].on(
        EXEC_SEARCH_JUDGE,
        {"answer": "Miriam Calloway", "sources": [1], "sufficient": True, "next_queries": []},
    )
    team["writer"].on(WRITER, "It was built by Miriam Calloway [1].")
    settings = make_settings()
    settings.document_probe_similarity = 0.99  # not "covered": only the floor can send it to the documents

    state, _, _ = await run(team.resources(docs_hub, settings), ON_TOPIC)

    master_prompt = next(call.prompt for call in team["master"].calls if MASTER in call.prompt)
    assert 'A search of them with this question found "The Harrow Point Lighthouse"' in master_prompt
    assert state["assessment"]["probe"]["similarity"] >= settings.document_probe_floor
    assert state["route"] == "executor" and state["assessment"]["escalated"] == "documents"
    assert state["answer"]["citations"], "answered from the documents, not from memory"


@pytest.mark.slow
async def test_a_complex_question_on_the_documents_topic_is_searched_serially_without_the_llm(
    team: Team, docs_hub: ToolHub
) -> None:
    question = "In which county was the engineer who built the Harrow Point lighthouse born?"
    team["writer"].on(WRITER, "She was born in Ashcombe [1].")
    settings = make_settings("cheap")
    settings.document_probe_similarity = 0.99  # not "covered": only the floor can send it to the documents

    state, _, _ = await run(team.resources(docs_hub, settings), question)

    assessed = state["assessment"]
    assert assessed["probe"]["similarity"] >= settings.document_probe_floor
    assert (state["route"], assessed["strategy"]) == ("executor", "serial"), "searched, not planned"
    assert not [call for call in team["master"].calls if MASTER in call.prompt], "no LLM assessment"


def test_an_open_question_is_searched_when_the_documents_cover_it_not_merely_touch_it() -> None:
    from agents.assessment import Probe, Reading
    from agents.master import err_towards_evidence

    open_question = "How should I structure logging in a large Python application?"
    settings = make_settings()

    def routed(similarity: float) -> str | None:
        reading = Reading(complexity="simple", resolved_query=open_question)
        probe = Probe(tool="docsearch.search", similarity=similarity, title="logging")
        return err_towards_evidence(reading, probe, settings).escalated

    assert routed(settings.document_probe_similarity) == "documents", "covered: searched, open or not"
    assert routed(settings.document_probe_floor) is None, "only on topic: an open question may use memory"


def test_a_complex_question_on_the_documents_topic_is_searched_by_the_executor_not_planned() -> None:
    from agents.assessment import Probe, Reading, route_for
    from agents.master import searches_enough

    question = "Who is the spouse of the actor that plays Vision in Avengers: Age of Ultron?"
    settings = make_settings()

    def routed(similarity: float, query: str = question) -> str:
        reading = Reading(complexity="complex", strategy="parallel", resolved_query=query)
        probe = Probe(tool="docsearch.search", similarity=similarity, title="Paul Bettany")
        reading.search_only = searches_enough(probe, query, settings)
        return route_for(reading)

    between = (settings.document_probe_floor + settings.document_probe_similarity) / 2
    assert routed(between) == "executor", "on topic though not covered: the search strategies"
    assert routed(settings.document_probe_floor / 2) == "planner", "off topic: the Planner"
    assert routed(between, "What is 17 * 23 plus the number of films Paul Bettany made?") == "planner"


@pytest.mark.slow
async def test_a_question_sent_to_the_documents_searches_them_first_whatever_the_tool_match(
    team: Team, docs_hub: ToolHub
) -> None:
    team["master"].on(
        MASTER, assessment("simple", resolved=ON_TOPIC, intent="calculate the arithmetic expression 17 * 23")
    )
    team["writer"].on(WRITER, "It was built by Miriam Calloway [1].")
    settings = make_settings()
    settings.document_probe_similarity = 0.99  # only the floor sends it to the documents

    state, path, _ = await run(team.resources(docs_hub, settings), ON_TOPIC)

    assert state["assessment"]["escalated"] == "documents"
    assert state["candidate_tools"][0]["name"] == "docsearch.search", "not the tool the wording matches"
    assert "direct_search" in path and state["answer"]["citations"]


@pytest.mark.slow
async def test_a_question_the_master_sends_to_search_alone_searches_the_documents_first(
    team: Team, docs_hub: ToolHub
) -> None:
    # complex, and the documents on its topic though not covering it: the Master reads that
    # searching them is enough, so the tool the wording matches best (the clock) is not bound
    question = "What was the population density of the city where the Kestrel Bridge opened in 2009?"
    team["master"].on(MASTER, assessment("complex", "parallel", resolved=question))
    team["executor"].on(lambda prompt: True, "{}")
    team["writer"].on(lambda prompt: True, "The passages do not say.")
    settings = make_settings()
    settings.document_probe_similarity, settings.document_probe_floor = 0.99, 0.0

    state, path, _ = await run(team.resources(docs_hub, settings), question)

    assert state["assessment"]["search_only"] and state["route"] == "executor"
    assert state["candidate_tools"][0]["name"] == "docsearch.search", "not the clock the wording matches"
    assert "parallel_search" in path and "dispatch" not in path


@pytest.mark.slow
async def test_a_calculation_binds_its_tool_however_near_the_documents_are(
    team: Team, docs_hub: ToolHub
) -> None:
    query = "What is 17 * 23 + 4?"
    team["master"].on(MASTER, assessment("moderate", resolved=query, intent="arithmetic"))
    team["executor"].on(EXEC_ARGS, {"expression": "17 * 23 + 4"})
    team["master"].on(EXEC_JUDGE, {"result": "395", "sufficient": True})
    team["writer"].on(WRITER, "395 [1].")
    settings = make_settings()
    settings.document_probe_similarity = settings.document_probe_floor = 0.0  # every document on topic
    settings.tool_candidates = 12

    state, _, _ = await run(team.resources(docs_hub, settings), query)

    assert state["assessment"]["probe"] is not None and state["route"] == "executor"
    assert state["candidate_tools"][0]["name"] != "docsearch.search"
    (result,) = state["results"].values()
    assert result["tool"].startswith("python.") and result["status"] == "ok"
