#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` once, from the llama.cpp sources that llama-cpp-python's
# source distribution vendors (so both servers run the same llama.cpp), into
# $AISEARCH_CACHE_DIR/llama-server/<version>/llama-server. Safe to run again: a cached binary that
# answers --version is kept. Called by scripts/bootstrap.sh; ~20 min on 2 busy cores, CPU only.
#
#   scripts/build_llama_server.sh [--force]
#
# Environment: PYTHON (an interpreter with pip, for `pip download`; default .venv/bin/python),
# AISEARCH_CACHE_DIR (default ~/.cache/aisearch), CMAKE_ARGS (override the CPU flags below),
# BUILD_JOBS (default: the number of cores).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LLAMA_VERSION="${LLAMA_VERSION:-0.3.36}"  # keep equal to models/llama_server.py
CACHE_DIR="${AISEARCH_CACHE_DIR:-$HOME/.cache/aisearch}"
DEST_DIR="$CACHE_DIR/llama-server/$LLAMA_VERSION"
BIN="$DEST_DIR/llama-server"
VPY="${PYTHON:-$ROOT/.venv/bin/python}"
JOBS="${BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}"
# The same portable AVX2 flags as the llama-cpp-python wheel (scripts/bootstrap.sh says why a native
# build is avoided). A static build: one self-contained binary, no shared libraries to find.
CPU_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}"

say() { printf '[llama-server %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [ "${1:-}" != "--force" ] && [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  say "cached: $BIN"
  exit 0
fi

mkdir -p "$DEST_DIR"
WORK="$(mktemp -d "$CACHE_DIR/llama-server/build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
LOG="$DEST_DIR/build.log"
: >"$LOG"
quietly() {
  if ! "$@" >>"$LOG" 2>&1; then
    echo "build_llama_server: '$*' failed; the end of $LOG:" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

say "fetching the llama-cpp-python $LLAMA_VERSION source distribution (details in $LOG)"
quietly "$VPY" -m pip download --quiet --no-binary :all: --no-deps \
  -d "$WORK" "llama-cpp-python==$LLAMA_VERSION"
tar -xzf "$WORK/llama_cpp_python-$LLAMA_VERSION.tar.gz" -C "$WORK"
SRC="$WORK/llama_cpp_python-$LLAMA_VERSION/vendor/llama.cpp"
[ -f "$SRC/tools/server/CMakeLists.txt" ] || { echo "build_llama_server: no llama.cpp server sources in the sdist" >&2; exit 1; }

say "building llama-server (once; CPU only, $JOBS jobs)"
# shellcheck disable=SC2086  # CPU_ARGS is a list of flags
quietly cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF $CPU_ARGS
quietly cmake --build "$WORK/build" --target llama-server -j "$JOBS"
install -m 0755 "$WORK/build/bin/llama-server" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
"$BIN" --version >>"$LOG" 2>&1
say "built $BIN"
