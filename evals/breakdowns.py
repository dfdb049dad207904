"""The summary's breakdowns: questions grouped by a field of theirs (type, split) or of aisearch's
output (route, strategy, reading, hop chain, what decided the route), W/T/L with NWR, time per node,
tokens per role, and the judge's position check. ``evals/summary.py`` assembles them."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from evals.judge import a_first
from evals.metrics import win_tie_lose
from evals.record_metrics import BASELINE, SYSTEM, system_output
from evals.stats import bootstrap_nwr_ci, mean, nwr, percentile, sign_test


def defined_mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are defined; None when none is."""
    present = [v for v in values if v is not None]
    return mean(present) if present else None


def outcome_stats(outcomes: Sequence[str], seed: int = 0) -> dict[str, Any]:
    """W/T/L counts of ``outcomes`` with their NWR, its bootstrap interval and the sign test's p."""
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


def latency_seconds(outputs: Iterable[Mapping[str, Any]]) -> list[float]:
    """The seconds of every output that recorded them."""
    return [float(o["latency_s"]) for o in outputs if isinstance(o.get("latency_s"), int | float)]


def judge_score(record: Mapping[str, Any], system: str, key: str) -> float | None:
    """The judge's ``key`` grade (``correctness``, ``faithfulness``) of ``system`` on ``record``."""
    verdict = (record.get("judge") or {}).get(system)
    value = verdict.get(key) if isinstance(verdict, dict) else None
    return float(value) if isinstance(value, int | float) else None


def node_stats(outputs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per graph node: mean, P50 and P80 seconds over the outputs, and how many runs of it."""
    seconds: dict[str, list[float]] = defaultdict(list)
    for output in outputs:
        for node, value in (output.get("node_seconds") or {}).items():
            if isinstance(value, int | float):
                seconds[node].append(float(value))
    return {
        node: {"mean": mean(v), "p50": percentile(v, 50), "p80": percentile(v, 80), "n": len(v)}
        for node, v in seconds.items()
    }


def token_stats(outputs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
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


def compared_reading(output: Mapping[str, Any]) -> str:
    """How the Writer read a question: a comparison settled entity by entity, one they left open,
    or whole (every other question)."""
    compared = output.get("compared") or {}
    if not compared:
        return "whole"
    return f"{compared.get('form')}: {'settled' if compared.get('settled') else 'open'}"


def by_question(
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
        stats = outcome_stats(outcomes)
        entry |= {
            "nwr": stats["nwr"],
            "nwr_ci": stats["nwr_ci"],
            "nwr_sign_p": stats["sign_p"],
            "paired_n": stats["n"],
        }
        grouped[group] = entry
    return grouped


def grouped_by_output(
    records: Sequence[Mapping[str, Any]],
    scored: Sequence[dict[str, dict[str, Any]]],
    key: Callable[[Mapping[str, Any]], Any],
) -> dict[str, dict[str, Any]]:
    """aisearch's questions grouped by ``key`` of its output (an error is its own group): size,
    EM/F1 against RAG's on the same questions, NWR and latency, largest group first."""
    groups: dict[str, list[tuple[Mapping[str, Any], dict[str, dict[str, Any]]]]] = defaultdict(list)
    for record, metrics in zip(records, scored, strict=True):
        output = system_output(record, SYSTEM)
        if output is not None:
            name = "error" if output.get("error") is not None else (key(output) or "unknown")
            groups[str(name)].append((record, metrics))
    result: dict[str, dict[str, Any]] = {}
    for name, rows in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        base = [m[BASELINE] for _, m in rows if BASELINE in m]
        outcomes = [win_tie_lose(m[SYSTEM]["f1"], m[BASELINE]["f1"]) for _, m in rows if BASELINE in m]
        latency = latency_seconds(system_output(r, SYSTEM) or {} for r, _ in rows)
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
