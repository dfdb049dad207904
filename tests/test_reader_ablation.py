"""The reader ablation builds each variant's prompt as the strategies' reading does."""

from __future__ import annotations

from evals.reader_ablation import VARIANTS, prompts_for

QUESTION = "Which is taller, Ostrava Tower or Lindqvist Tower?"


def passage(title: str) -> dict[str, str]:
    return {"id": title, "title": title, "content": f"{title} is a tower."}


def test_every_variant_reads_its_own_passages_with_its_own_prompt() -> None:
    top = [passage("Ostrava Tower"), passage("Lindqvist Tower")]
    parallel = [passage("Ostrava Tower"), passage("Lindqvist Tower"), passage("Towers of Europe")]

    prompts = prompts_for(QUESTION, top, parallel, own=1)

    assert tuple(prompts) == VARIANTS
    system, direct = prompts["writer_question_top5"]
    assert system == "reader_system" and "(The answer is one of: Ostrava Tower or Lindqvist Tower.)" in direct
    assert "one of:" not in prompts["writer_parallel_nohint"][1]
    assert "[3] Towers of Europe" in prompts["writer_parallel_nohint"][1]
    rag_system, first = prompts["rag_parallel_question_first"]
    assert rag_system == "baseline_system" and first.index("Towers of Europe") < first.index("Ostrava Tower")
