#!/usr/bin/env bash
# scripts/demo.sh: what `make demo` runs after building: the tiny default model trained on the bundled
# corpus (prepared into data/kjv/ on first use) for a couple of minutes on this machine, with live
# progress and validation, then a sample of generated text. Checkpoint in runs/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${DEMO_STEPS:-600}
./build/bin/archipelago train --config tiny --batch 8 --seq-len 128 --steps "$STEPS" --lr 2e-3 --warmup 30 \
  --val-every 100 --out runs/demo
echo
echo "=== sample from runs/demo/model.bin ==="
./build/bin/archipelago sample --checkpoint runs/demo/model.bin --prompt "And the LORD said" --tokens 120
