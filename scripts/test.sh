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
.venv/bin/ruff check .
exec .venv/bin/pytest "$@"
