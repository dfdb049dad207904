"""Aggregate per-question QA records (``questions.jsonl``) into the run's summary JSON.

One record per question, written by the runner as each question finishes::

    {"id", "question", "gold", "aliases", "type", "level", "supporting_titles",
     "systems": {"aisearch": {...}, "rag": {...}, "closed_book": {...}},
     "judge": {"aisearch": {"correctness", "faithfulness"}, ..., "pairwise": {"aisearch_vs_rag": "win"}}}

``record_metrics`` scores one system on one record (the runner's LangSmith evaluators call it);
``summarise`` computes the aggregate numbers (the team's JSON contract: ``n, em, f1, cover,
baseline_em, baseline_f1, baseline_cover, nwr, route_counts, errors, latency_p50_s,
baseline_latency_p50_s`` and more), with ``aisearch`` as the system under test and ``rag`` as the
baseline.

Kept in one file (over 300 lines): the summary is the team's JSON contract, computed in one place.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.chain_summary import chain_breaks, chain_kind
from evals.judge import a_first
from evals.metrics import citation_scores, cover, exact_match, title_recall, token_f1, win_tie_lose
from evals.qa_data import split_of
from evals.stats import (
    agreement,
    bootstrap_mean_diff_ci,
    bootstrap_nwr_ci,
    cohen_kappa,
    mean,
    nwr,
    percentile,
    sign_test,
)

log = logging.getLogger(__name__)

SYSTEM = "aisearch"
BASELINE = "rag"
SYSTEM_ORDER = ("aisearch", "rag", "closed_book")
PAIRWISE_KEY = f"{SYSTEM}_vs_{BASELINE}"
METRICS = (
    "em",
    "f1",
    "cover",
    "evidence_title_recall",
    "answer_in_evidence",
    "citation_title_recall",
    "citation_precision",
    "citation_recall",
)
YES_NO = {"yes", "no"}


def load_records(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file of per-question records, tolerating a crash mid-write.

    Blank lines are skipped; a line that is not a JSON object (typically the truncated last line of
    a run that was killed) is skipped with a warning. When the same ``id`` appears twice (a resumed
    run re-answering a question) the last record wins, at the position of the first.

    Args:
        path: the ``questions.jsonl`` file.

    Returns:
        The records in file order; an empty list when the file does not exist.
    """
    path = Path(path)
    if not path.exists():
        return []
    by_key: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            log.warning("%s:%d: skipping a corrupt line (%s)", path, number, exc)
            continue
        if not isinstance(record, dict):
            log.warning("%s:%d: skipping a line that is not a JSON object", path, number)
            continue
        key = str(record["id"]) if record.get("id") is not None else f"#line{number}"
        by_key[key] = record
    return list(by_key.values())


RECORDS = "questions.jsonl"  # a run's per-question records
VERDICTS = "judge.jsonl"  # the judge's verdicts given after the run (``aisearch eval judge``)


def load_run_records(run_dir: str | Path) -> list[dict[str, Any]]:
    """A run's records, each with the verdicts ``aisearch eval judge`` gave it later (when the run
    itself had no judge), from ``judge.jsonl`` beside them."""
    run = Path(run_dir)
    records = load_records(run / RECORDS)
    verdicts = {str(v["id"]): v for v in load_records(run / VERDICTS)}
    for record in records:
        later = verdicts.get(str(record.get("id")))
        if later is not None and not record.get("judge"):
            record["judge"], record["judge_seconds"] = later.get("judge"), later.get("judge_seconds")
    return records


def _system(record: Mapping[str, Any], system: str) -> dict[str, Any] | None:
    result = (record.get("systems") or {}).get(system)
    return result if isinstance(result, dict) else None


def _passages(output: Mapping[str, Any]) -> dict[int, str]:
    """Citation number -> cited passage text (title and content), via the citation's evidence id."""
    evidence = [e for e in output.get("evidence") or [] if isinstance(e, dict)]
    by_id = {e.get("id"): f"{e.get('title') or ''} {e.get('content') or ''}".strip() for e in evidence}
    citations = [c for c in output.get("citations") or [] if isinstance(c, dict)]
    if not citations:  # no citation table: numbers index the evidence list directly
        return {i: by_id[e.get("id")] for i, e in enumerate(evidence, start=1)}
    return {int(c["n"]): by_id.get(c.get("evidence_id"), "") for c in citations if c.get("n") is not None}


def record_metrics(record: Mapping[str, Any], system: str) -> dict[str, float | None]:
    """Score one system's output on one question record.

    EM and F1 compare ``short`` (or ``prediction`` when there is no short answer) with ``gold``;
    cover looks for the gold answer in the full ``prediction``; the title recalls compare the
    supporting titles with the titles of the evidence and of the citations; citation
    precision/recall check each sentence's cited passages lexically (see
    :func:`evals.metrics.citation_scores`). A system that errored scores 0 on everything it did
    not produce.

    Args:
        record: one per-question record.
        system: the system's key under ``record["systems"]``.

    Returns:
        ``{em, f1, cover, evidence_title_recall, citation_title_recall, citation_precision,
        citation_recall}``; a value is ``None`` when it is undefined (no supporting titles, a
        system that does not cite, no citation or no factual sentence to check) or the system is
        missing from the record.
    """
    output = _system(record, system)
    if output is None:
        return dict.fromkeys(METRICS)
    gold = record.get("gold") or ""
    prediction = output.get("prediction") or ""
    short = output.get("short")
    short = prediction if short is None else short
    errored = output.get("error") is not None
    gold_titles = [t for t in record.get("supporting_titles") or [] if t]
    evidence = [e for e in output.get("evidence") or [] if isinstance(e, dict)]
    citations = [c for c in output.get("citations") or [] if isinstance(c, dict)]
    sentences = [s for s in output.get("sentences") or [] if isinstance(s, dict)]
    cites = bool(sentences or citations)

    golds = [gold, *(alias for alias in record.get("aliases") or [] if alias)]  # the best match counts
    metrics: dict[str, float | None] = {
        "em": 0.0 if errored else max(exact_match(short, g) for g in golds),
        "f1": 0.0 if errored else max(token_f1(short, g) for g in golds),
        "cover": 0.0 if errored else cover(f"{short} {prediction}", gold),
        "evidence_title_recall": (
            title_recall(gold_titles, [e.get("title") or "" for e in evidence]) if gold_titles else None
        ),
        # where the answer was lost: in retrieval (not in the evidence) or in reading (in it)
        "answer_in_evidence": (
            cover(" ".join(f"{e.get('title', '')} {e.get('content', '')}" for e in evidence), gold)
            if evidence and gold and gold.strip().lower() not in YES_NO
            else None
        ),
        "citation_title_recall": (
            title_recall(gold_titles, [c.get("title") or "" for c in citations])
            if gold_titles and cites
            else None
        ),
        "citation_precision": None,
        "citation_recall": None,
    }
    if sentences:
        passages = _passages(output)
        pairs = [
            (s.get("text") or "", [passages.get(int(n), "") for n in s.get("cited") or []]) for s in sentences
        ]
        scores = citation_scores(pairs)
        metrics["citation_precision"] = scores["precision"]
        metrics["citation_recall"] = scores["recall"]
    return metrics


def _defined_mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return mean(present) if present else None


def _outcome_stats(outcomes: Sequence[str], seed: int = 0) -> dict[str, Any]:
    counts = Counter(outcomes)
    return {
        "nwr": nwr(outcomes),
        "nwr_ci": list(bootstrap_nwr_ci(outcomes, seed=seed)),
        "sign_p": sign_test(counts["win"], counts["lose"]),
        "wins": counts["win"],
        "ties": counts["tie"],
        "losses": counts["lose"],
        "n": len(outcomes),
    }


def _latency(outputs: Iterable[Mapping[str, Any]]) -> list[float]:
    return [float(o["latency_s"]) for o in outputs if isinstance(o.get("latency_s"), int | float)]


def _judge(record: Mapping[str, Any], system: str, key: str) -> float | None:
    verdict = (record.get("judge") or {}).get(system)
    value = verdict.get(key) if isinstance(verdict, dict) else None
    return float(value) if isinstance(value, int | float) else None


def _node_stats(outputs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    seconds: dict[str, list[float]] = defaultdict(list)
    for output in outputs:
        for node, value in (output.get("node_seconds") or {}).items():
            if isinstance(value, int | float):
                seconds[node].append(float(value))
    return {
        node: {"mean": mean(v), "p50": percentile(v, 50), "p80": percentile(v, 80), "n": len(v)}
        for node, v in seconds.items()
    }


def _token_stats(outputs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per role: mean prompt/completion tokens over the questions that used the role; ``total``:
    mean tokens per question over all the system's questions."""
    prompt: dict[str, list[float]] = defaultdict(list)
    completion: dict[str, list[float]] = defaultdict(list)
    totals_prompt, totals_completion = [], []
    for output in outputs:
        p_total = c_total = 0.0
        for role, used in (output.get("tokens") or {}).items():
            if not isinstance(used, dict):
                continue
            p, c = float(used.get("prompt") or 0), float(used.get("completion") or 0)
            prompt[role].append(p)
            completion[role].append(c)
            p_total, c_total = p_total + p, c_total + c
        totals_prompt.append(p_total)
        totals_completion.append(c_total)
    stats = {
        role: {
            "prompt_mean": mean(prompt[role]),
            "completion_mean": mean(completion[role]),
            "n": len(prompt[role]),
        }
        for role in prompt
    }
    if prompt:
        stats["total"] = {
            "prompt_mean": mean(totals_prompt),
            "completion_mean": mean(totals_completion),
            "n": len(totals_prompt),
        }
    return stats


def _system_names(records: Sequence[Mapping[str, Any]]) -> list[str]:
    seen = {name for r in records for name in (r.get("systems") or {})}
    return [s for s in SYSTEM_ORDER if s in seen] + sorted(seen - set(SYSTEM_ORDER))


def _compared(output: Mapping[str, Any]) -> str:
    """How the Writer read a question: a comparison settled entity by entity, one they left open,
    or whole (every other question)."""
    compared = output.get("compared") or {}
    if not compared:
        return "whole"
    return f"{compared.get('form')}: {'settled' if compared.get('settled') else 'open'}"


def _by_question(
    records: Sequence[Mapping[str, Any]],
    scored: Sequence[dict[str, dict[str, Any]]],
    names: Sequence[str],
    key: Callable[[Mapping[str, Any]], str],
) -> dict[str, dict[str, Any]]:
    """Questions grouped by ``key`` of the question: every system's n/EM/F1, and the F1-based NWR of
    aisearch against rag."""
    grouped: dict[str, dict[str, Any]] = {}
    for group in sorted({key(r) for r in records}):
        rows = [(r, s) for r, s in zip(records, scored, strict=True) if key(r) == group]
        entry: dict[str, Any] = {}
        for name in names:
            metrics = [s[name] for _, s in rows if name in s]
            if metrics:
                entry[name] = {
                    "n": len(metrics),
                    "em": mean([m["em"] for m in metrics]),
                    "f1": mean([m["f1"] for m in metrics]),
                }
        outcomes = [
            win_tie_lose(s[SYSTEM]["f1"], s[BASELINE]["f1"]) for _, s in rows if SYSTEM in s and BASELINE in s
        ]
        stats = _outcome_stats(outcomes)
        entry |= {
            "nwr": stats["nwr"],
            "nwr_ci": stats["nwr_ci"],
            "nwr_sign_p": stats["sign_p"],
            "paired_n": stats["n"],
        }
        grouped[group] = entry
    return grouped


def _grouped(
    records: Sequence[Mapping[str, Any]],
    scored: Sequence[dict[str, dict[str, Any]]],
    key: Callable[[Mapping[str, Any]], Any],
) -> dict[str, dict[str, Any]]:
    """aisearch's questions grouped by ``key`` of its output (an error is its own group): size,
    EM/F1 against RAG's on the same questions, NWR and latency, largest group first."""
    groups: dict[str, list[tuple[Mapping[str, Any], dict[str, dict[str, Any]]]]] = defaultdict(list)
    for record, metrics in zip(records, scored, strict=True):
        output = _system(record, SYSTEM)
        if output is not None:
            name = "error" if output.get("error") is not None else (key(output) or "unknown")
            groups[str(name)].append((record, metrics))
    result: dict[str, dict[str, Any]] = {}
    for name, rows in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        base = [m[BASELINE] for _, m in rows if BASELINE in m]
        outcomes = [win_tie_lose(m[SYSTEM]["f1"], m[BASELINE]["f1"]) for _, m in rows if BASELINE in m]
        latency = _latency(_system(r, SYSTEM) or {} for r, _ in rows)
        result[name] = {
            "n": len(rows),
            "em": mean([m[SYSTEM]["em"] for _, m in rows]),
            "f1": mean([m[SYSTEM]["f1"] for _, m in rows]),
            "rag_em": mean([b["em"] for b in base]) if base else None,
            "rag_f1": mean([b["f1"] for b in base]) if base else None,
            "nwr": nwr(outcomes),
            "latency_p50_s": percentile(latency, 50) if latency else None,
            "latency_p80_s": percentile(latency, 80) if latency else None,
        }
    return result


def judge_position(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per pairwise comparison, how often the judge picked the answer shown first (A) or second (B).

    The order is a stable coin flip per question (``evals.judge.a_first``), so a judge that reads
    the answers picks A about as often as B; a sign test far from 0.5 means the verdicts follow the
    position, not the answers. Ties count for neither.
    """
    picks: dict[str, Counter[str]] = defaultdict(Counter)
    for record in records:
        for key, verdict in ((record.get("judge") or {}).get("pairwise") or {}).items():
            if verdict in ("win", "lose"):
                first_won = verdict == "win"
                picks[key]["A" if first_won == a_first(str(record.get("id"))) else "B"] += 1
    return {
        key: {"A": c["A"], "B": c["B"], "sign_p": sign_test(c["A"], c["B"])}
        for key, c in sorted(picks.items())
    }


def summarise(
    records: Sequence[Mapping[str, Any]], config: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Aggregate per-question records into the summary JSON of a QA run.

    Args:
        records: per-question records (see the module docstring), e.g. from :func:`load_records`.
        config: the run's configuration (command, machine, date, models, ...), copied as is.

    Returns:
        The summary: headline numbers for ``aisearch`` (``em``, ``f1``, ``cover``, latencies) and
        the ``rag`` baseline (``baseline_*``), F1-based side-by-side (``nwr``, ``nwr_ci``,
        ``nwr_sign_p``, ``wins``/``ties``/``losses``), paired EM comparison (``em_diff_ci``,
        ``em_sign_p``), judge-based NWR when the judge ran, and breakdowns ``systems``,
        ``by_type``, ``by_route``, ``route_counts``, ``replan_rate``, ``node_seconds``, ``tokens``,
        ``judge_agreement``, ``errors``/``errors_by_system``.
    """
    names = _system_names(records)
    scored: list[dict[str, dict[str, float | None]]] = [
        {name: record_metrics(r, name) for name in names if _system(r, name) is not None} for r in records
    ]

    systems: dict[str, dict[str, Any]] = {}
    errors_by_system: dict[str, int] = {}
    for name in names:
        present = [(r, s[name]) for r, s in zip(records, scored, strict=True) if name in s]
        outputs = [_system(r, name) or {} for r, _ in present]
        latency = _latency(outputs)
        errors_by_system[name] = sum(o.get("error") is not None for o in outputs)
        entry: dict[str, Any] = {"n": len(present)}
        for metric in METRICS:
            entry[metric] = _defined_mean(m[metric] for _, m in present)
        entry["judge_correctness"] = _defined_mean(_judge(r, name, "correctness") for r, _ in present)
        entry["judge_faithfulness"] = _defined_mean(_judge(r, name, "faithfulness") for r, _ in present)
        entry["latency_p50_s"] = percentile(latency, 50) if latency else None
        entry["latency_p80_s"] = percentile(latency, 80) if latency else None
        entry["errors"] = errors_by_system[name]
        systems[name] = entry

    def headline(name: str, key: str) -> Any:
        return systems[name][key] if name in systems else None

    # Side by side: aisearch against rag on the questions both answered (an error scores 0).
    paired = [
        (r, s[SYSTEM], s[BASELINE])
        for r, s in zip(records, scored, strict=True)
        if SYSTEM in s and BASELINE in s
    ]
    f1_outcomes = [win_tie_lose(a["f1"], b["f1"]) for _, a, b in paired]
    f1_stats = _outcome_stats(f1_outcomes)
    em_a = [a["em"] for _, a, _ in paired]
    em_b = [b["em"] for _, _, b in paired]
    em_fixed = sum(a > b for a, b in zip(em_a, em_b, strict=True))
    em_broken = sum(b > a for a, b in zip(em_a, em_b, strict=True))

    our_outputs = [o for r in records if (o := _system(r, SYSTEM)) is not None]
    a_latency, b_latency = headline(SYSTEM, "latency_p50_s"), headline(BASELINE, "latency_p50_s")

    summary: dict[str, Any] = {
        "n": len(records),
        "em": headline(SYSTEM, "em"),
        "f1": headline(SYSTEM, "f1"),
        "cover": headline(SYSTEM, "cover"),
        "baseline_em": headline(BASELINE, "em"),
        "baseline_f1": headline(BASELINE, "f1"),
        "baseline_cover": headline(BASELINE, "cover"),
        "nwr": f1_stats["nwr"],
        "nwr_ci": f1_stats["nwr_ci"],
        "nwr_sign_p": f1_stats["sign_p"],
        "wins": f1_stats["wins"],
        "ties": f1_stats["ties"],
        "losses": f1_stats["losses"],
        "paired_n": len(paired),
        "em_diff_ci": list(bootstrap_mean_diff_ci(em_a, em_b)),
        "em_sign_p": sign_test(em_fixed, em_broken),
        "em_flips": {"aisearch_only": em_fixed, "rag_only": em_broken},
        "latency_p50_s": a_latency,
        "latency_p80_s": headline(SYSTEM, "latency_p80_s"),
        "baseline_latency_p50_s": b_latency,
        "baseline_latency_p80_s": headline(BASELINE, "latency_p80_s"),
        "latency_ratio_p50": a_latency / b_latency if a_latency is not None and b_latency else None,
        "errors": sum(
            any((_system(r, name) or {}).get("error") is not None for name in (SYSTEM, BASELINE))
            for r in records
        ),
        "errors_by_system": errors_by_system,
        "systems": systems,
    }

    # Judge: pairwise NWR per comparison, and how often "correct" (2) agrees with EM.
    pairwise: dict[str, list[str]] = defaultdict(list)
    for record in records:
        for key, verdict in ((record.get("judge") or {}).get("pairwise") or {}).items():
            if verdict in ("win", "tie", "lose"):
                pairwise[key].append(verdict)
    summary["judge_pairwise"] = {key: _outcome_stats(v) for key, v in sorted(pairwise.items())}
    position = judge_position(records)
    if position:
        summary["judge_position"] = position
    if PAIRWISE_KEY in pairwise:
        judged = summary["judge_pairwise"][PAIRWISE_KEY]
        summary |= {
            "nwr_judge": judged["nwr"],
            "nwr_judge_ci": judged["nwr_ci"],
            "nwr_judge_sign_p": judged["sign_p"],
            "judge_wins": judged["wins"],
            "judge_ties": judged["ties"],
            "judge_losses": judged["losses"],
        }
    agreement_by_system, kappa_by_system = {}, {}
    for name in names:
        pairs = [
            (c == 2.0, m[name]["em"] == 1.0)
            for r, m in zip(records, scored, strict=True)
            if name in m and (c := _judge(r, name, "correctness")) is not None
        ]
        if pairs:
            judge_labels, em_labels = [p[0] for p in pairs], [p[1] for p in pairs]
            agreement_by_system[name] = agreement(judge_labels, em_labels)
            kappa_by_system[name] = cohen_kappa(judge_labels, em_labels)
    if agreement_by_system:
        summary["judge_agreement"] = agreement_by_system
        summary["judge_kappa"] = kappa_by_system

    # By question type and by split (tuning / held out): every system's EM/F1, and aisearch's NWR.
    summary["by_type"] = _by_question(records, scored, names, lambda r: str(r.get("type") or "unknown"))
    summary["by_split"] = _by_question(records, scored, names, lambda r: split_of(str(r.get("id", ""))))
    summary["by_chain"] = _grouped(records, scored, chain_kind)
    summary["chain_breaks"] = chain_breaks(records)

    # By route (the Master's choice for aisearch), by strategy and by what decided the route, with
    # rag on the same questions for reference.
    by_route = _grouped(records, scored, lambda output: output.get("route"))
    summary["by_route"] = by_route
    summary["by_strategy"] = _grouped(
        records, scored, lambda output: f"{output.get('route')}/{output.get('strategy') or '-'}"
    )
    summary["by_comparison"] = _grouped(records, scored, _compared)
    summary["by_decider"] = _grouped(records, scored, lambda output: output.get("decided_by") or "llm")
    summary["route_counts"] = {route: entry["n"] for route, entry in by_route.items()}
    summary["route_share"] = {route: n / len(our_outputs) for route, n in summary["route_counts"].items()}
    summary["replan_rate"] = (
        mean([float((o.get("replans") or 0) > 0) for o in our_outputs]) if our_outputs else None
    )

    summary["node_seconds"] = _node_stats(our_outputs)
    summary["node_seconds_by_system"] = {
        name: _node_stats(_system(r, name) or {} for r in records if _system(r, name) is not None)
        for name in names
    }
    summary["tokens"] = {
        name: _token_stats([_system(r, name) or {} for r in records if _system(r, name) is not None])
        for name in names
    }
    by_strategy: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for output in our_outputs:
        if output.get("error") is None:
            by_strategy[f"{output.get('route')}/{output.get('strategy') or '-'}"].append(output)
    summary["tokens_by_strategy"] = {
        key: _token_stats(outputs) for key, outputs in sorted(by_strategy.items())
    }
    summary["config"] = dict(config or {})
    return summary
