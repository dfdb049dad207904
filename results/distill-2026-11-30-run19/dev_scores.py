"""Each candidate of run nineteen on the whole dev split: greedy accuracy, the decline threshold
that would have served it best and the accuracy estimated with that threshold deciding
(``evals.decline_margin.best_threshold_and_score``), per category greedy. Reads the calibration
runs kept beside each candidate (``<distill dir>/select/<candidate>/calibrate-run/bfcl.jsonl``).

Run: ``.venv/bin/python results/distill-2026-11-30-run19/dev_scores.py [distill dir]``
"""

import json
import sys
from pathlib import Path

from evals.decline_margin import best_threshold_and_score

root = Path(sys.argv[1] if len(sys.argv) > 1 else "~/.cache/aisearch/distill-2026-11-30-run19").expanduser()
scores = {}
for folder in sorted((root / "select").iterdir()):
    records = folder / "calibrate-run" / "bfcl.jsonl"
    if not records.is_file():
        continue
    rows = [json.loads(line) for line in records.open()]
    by_category: dict[str, list[bool]] = {}
    for row in rows:
        by_category.setdefault(row["category"], []).append(bool(row.get("correct")))
    greedy = {c: round(sum(v) / len(v), 3) for c, v in by_category.items()}
    threshold, estimate = best_threshold_and_score(rows) or (None, None)
    scores[folder.name] = {
        "n": len(rows),
        "greedy_accuracy": round(sum(greedy.values()) / len(greedy), 4),
        "threshold": threshold,
        "threshold_accuracy": estimate,
        "greedy_by_category": greedy,
    }
sys.stdout.write(json.dumps(scores, indent=2) + "\n")
