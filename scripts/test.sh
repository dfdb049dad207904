#!/usr/bin/env bash
# The README's test command (and what .ci/run calls): set up if needed, lint, run every test,
# including the ones marked `local_model` that load the real GGUF models (small inputs).
#
#   scripts/test.sh [pytest args...]      e.g. scripts/test.sh -m "not local_model"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/bootstrap.sh
export LANGSMITH_TRACING=false HF_HUB_OFFLINE=1
# BFCL's pinned wheel (data and AST checker, from PyPI) once, so its scoring tests run; they skip without it
.venv/bin/python -c 'from evals.bfcl_fetch import ensure_bfcl; ensure_bfcl()' 2>/dev/null \
  || echo "test.sh: BFCL's wheel could not be fetched; the tests that need its checker skip" >&2
.venv/bin/ruff check .
.venv/bin/python -m mypy
exec .venv/bin/pytest "$@"
