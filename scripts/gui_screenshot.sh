#!/usr/bin/env bash
# scripts/gui_screenshot.sh: the screenshot in the README (docs/gui-run-view.png), from a live loopback
# run: a host `archipelago daemon` told to host over its control API (POST /api/host) and two
# `archipelago peer` islands, training the tiny model on the bundled corpus; the app's main window
# attaches to the host daemon under Xvfb and is saved once ROUNDS rounds show (tests/gui/gui_screenshot.cpp:
# the shipped archipelago-gui has no screenshot hook).
# usage: scripts/gui_screenshot.sh [OUT.png]   (env: ARCH_BIN=build/bin ROUNDS=6 PORT=7491)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${ARCH_BIN:-build/bin}
A=$BIN/archipelago
SHOT=$BIN/gui_screenshot
OUT=$(realpath -m "${1:-docs/gui-run-view.png}")
ROUNDS=${ROUNDS:-6}
PORT=${PORT:-7491}
DIR=$PWD/runs/gui-screenshot
rm -rf "$DIR"
mkdir -p "$DIR"

cat > "$DIR/run.toml" <<TOML
[run]
name = "kjv-loopback"
rounds = 40
islands = 2
mode = "sync"
bind = "tcp://127.0.0.1:5591"
checkpoint_dir = "$DIR/host"

[model]
config = "tiny"

[inner]
steps_per_round = 20
batch = 8
seq_len = 64
lr = 2e-3
warmup = 10

[wire]
codec = "int8:block=256+zstd:1"
TOML
for i in 1 2; do
  $A keygen --out "$DIR/island-$i.key" > /dev/null
  $A invite --config "$DIR/run.toml" --peer-key "$DIR/island-$i.key.pub" --name "island-$i" --out "$DIR/island-$i.invite" > /dev/null
done

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; }
trap cleanup EXIT
$A daemon --control-port "$PORT" --token-file "$DIR/host.token" 2> "$DIR/host.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$DIR/host.token" ] && curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
TOKEN=$(cat "$DIR/host.token")
python3 -c 'import json,sys; print(json.dumps({"config": open(sys.argv[1]).read()}))' "$DIR/run.toml" |
  curl -sSf -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" --data @- \
    "http://127.0.0.1:$PORT/api/host"
echo
for i in 1 2; do
  OMP_NUM_THREADS=2 $A peer --invite "$DIR/island-$i.invite" --key "$DIR/island-$i.key" --name "island-$i" \
    2> "$DIR/island-$i.log" &
  pids+=($!)
done

echo "gui_screenshot: run started; waiting for $ROUNDS rounds in the app's window under Xvfb"
timeout 600 xvfb-run -a -s "-screen 0 1920x1080x24" "$SHOT" "$OUT" "$ROUNDS" --attach-only --port "$PORT" \
  --token-file "$DIR/host.token"
echo "gui_screenshot: wrote $OUT"
