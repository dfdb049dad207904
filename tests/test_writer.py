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
