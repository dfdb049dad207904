#!/usr/bin/env bash
# one short training run from scratch: $1 = code dir, $2 = run dir
set -e
rm -rf "$2"; mkdir -p "$2"
cp $HOME/.cache/aisearch/distill-2026-12-02-run22/curated.jsonl "$2/"
cd "$1"
AISEARCH_DISTILL_DIR="$2" HF_HUB_OFFLINE=1 exec /work/main/.venv/bin/python -m app.cli distill train --max-steps 12 --max-minutes 30 --learning-rate 2e-4 --layers 12 --schedule constant --keep-every 0 -q
