"""Writer citations: numbered sources map to real evidence ids; invalid numbers are dropped."""

from __future__ import annotations

from agents.writer import build_answer, number_sources


def evidence(eid: str, kind: str = "tool", task: str = "t1") -> dict:
    return {
        "id": eid,
        "kind": kind,
        "title": f"title {eid}",
        "source": f"src {eid}",
        "content": "c",
        "task_id": task,
    }


def test_sources_are_numbered_in_plan_order_and_citations_map_to_evidence_ids() -> None:
    state = {
        "plan": {"tasks": [{"id": "t2"}, {"id": "t1"}]},
        "results": {"t1": {"evidence_ids": ["e-a"]}, "t2": {"evidence_ids": ["e-b", "e-a"]}},
        "evidence": {"e-a": evidence("e-a"), "e-b": evidence("e-b", "model", "t2")},
    }
    sources = number_sources(state)
    assert [s["id"] for s in sources] == ["e-b", "e-a"]
    answer = build_answer(
        "Caesar was born in 100 BC [1]. Wu was born in 156 BC [2][7]. Thus Wu was older.",
        sources,
        missing=["x"],
    )
    assert [(c["n"], c["evidence_id"], c["kind"]) for c in answer["citations"]] == [
        (1, "e-b", "model"),
        (2, "e-a", "tool"),
    ]
    assert answer["invalid_citations"] == [7] and "[7]" not in answer["text"]
    assert answer["model_knowledge_citations"] == [1]
    assert answer["uncited_sentences"] == ["Thus Wu was older."]
    assert answer["missing"] == ["x"] and answer["basis"] == "sources"


def test_an_answer_without_sources_is_marked_as_model_knowledge() -> None:
    answer = build_answer("Liu Che.", [], missing=[])
    assert (
        answer["basis"] == "model_knowledge"
        and answer["citations"] == []
        and answer["uncited_sentences"] == []
    )


def test_a_question_about_the_present_reads_a_tasks_newest_pages_first() -> None:
    def page(eid: str, published: str = "") -> dict:
        item = evidence(eid, "document")
        return item | {"published": published} if published else item

    pages = [
        page("w-old", "2024-03-01"),
        page("w-undated"),
        page("w-new", "2026-11-20"),
        page("w-mid", "2025-06-30"),
    ]
    state = {
        "plan": {"tasks": [{"id": "t1"}]},
        "results": {"t1": {"evidence_ids": [item["id"] for item in pages]}},
        "evidence": {item["id"]: item for item in pages},
    }
    latest = number_sources(state | {"query": "What is the latest release of Kestrel?"})
    assert [s["id"] for s in latest] == ["w-new", "w-mid", "w-old", "w-undated"]
    timeless = number_sources(state | {"query": "Who founded Kestrel?"})
    assert [s["id"] for s in timeless] == ["w-old", "w-undated", "w-new", "w-mid"], "search order kept"

    answer = build_answer("Kestrel 4.2 is the latest [1].", latest, missing=[])
    assert answer["sources"][0]["published"] == "2026-11-20"
    assert "published" not in answer["sources"][3], "no date where the source gives none"
