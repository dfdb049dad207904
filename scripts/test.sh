#!/usr/bin/env bash
# The README's test command (and what .ci/run calls): set up if needed, lint (ruff, mypy), run every test,
# including the ones marked `local_model` that load the real GGUF models (small inputs), on two
# pytest-xdist workers (aim: under 15 min on 2 cores).
#
#   scripts/test.sh [pytest args...]          everything, e.g. scripts/test.sh -q --durations=25
#   scripts/test.sh --fast [pytest args...]   the unit tier (aim: under 3 min on 2 cores): no real models,
#                                             browser, langgraph dev server, nor tests marked `slow`
#
# AISEARCH_TEST_WORKERS=N sets the number of workers (default 2; 0 runs in this process). Tests that
# must run on one worker, one after another (the real models, the sandbox), are grouped by file in
# tests/support/scheduling.py (--dist loadgroup).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
markers=()
if [ "${1:-}" = "--fast" ]; then
  shift
  markers=(-m "not local_model and not server and not browser and not slow")
fi
scripts/bootstrap.sh
export LANGSMITH_TRACING=false HF_HUB_OFFLINE=1
# BFCL's pinned wheel (data and AST checker, from PyPI) once, so its scoring tests run; they skip without it
.venv/bin/python -c 'from evals.bfcl_fetch import ensure_bfcl; ensure_bfcl()' 2>/dev/null \
  || echo "test.sh: BFCL's wheel could not be fetched; the tests that need its checker skip" >&2
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m mypy
workers="${AISEARCH_TEST_WORKERS:-2}"
parallel=()
[ "$workers" = 0 ] || parallel=(-n "$workers" --dist loadgroup)
exec .venv/bin/pytest "${parallel[@]}" "${markers[@]}" "$@"
