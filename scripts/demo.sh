#!/usr/bin/env bash
# scripts/demo.sh: what `make demo` runs after building: a DiLoCo run of a host and 3 peers on
# 127.0.0.1 with fresh keys, training the tiny default on the bundled corpus (data/demo-run.toml).
# The host prints one row per round; peers log to runs/demo/peer-N.log; then a sample of text.
# ARCH_DEMO_DEVICE=cuda puts peer-1's island on the GPU (CPU and GPU islands in one run);
# ARCH_BIN picks another build's binaries (bench/gpu_check.sh uses build-gpu/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
A=${ARCH_BIN:-./build/bin}/archipelago
DIR=runs/demo
CONFIG=data/demo-run.toml
rm -rf "$DIR"
mkdir -p "$DIR"
# The host and the islands prepare the bundled corpus into the user's data directory (once: the first
# to start does it under a lock, the others wait for it). The same rule as core/install_paths.h:
DATA=${ARCH_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/archipelago}
for i in 1 2 3; do
  $A keygen --out "$DIR/peer-$i.key" > /dev/null
  $A invite --config "$CONFIG" --peer-key "$DIR/peer-$i.key.pub" --name "peer-$i" --out "$DIR/peer-$i.invite"
done
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
$A host --config "$CONFIG" 2> "$DIR/host.log" &
host_pid=$!
for i in 1 2 3; do
  device=cpu
  if [ "$i" = 1 ]; then device=${ARCH_DEMO_DEVICE:-cpu}; fi
  OMP_NUM_THREADS=1 $A peer --invite "$DIR/peer-$i.invite" --key "$DIR/peer-$i.key" --name "peer-$i" \
    --device "$device" 2> "$DIR/peer-$i.log" &
  pids+=($!)
done
echo "host and 3 peers started; logs in $DIR/ (tail -f $DIR/host.log to watch)"
wait "$host_pid"
for p in "${pids[@]}"; do wait "$p" || true; done
echo
echo "=== sample from the global model ($DIR/host/model.bin) ==="
$A sample --checkpoint "$DIR/host/model.bin" --tokenizer "$DATA/corpus/kjv/tokenizer.bin" --prompt "And the LORD said" --tokens 120
