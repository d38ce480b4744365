#!/usr/bin/env bash
# scripts/demo_wan.sh: what `make demo-wan` runs: the run of `make demo` (data/demo-run.toml) across
# 4 network namespaces (tests/wan/netns.sh): the host and each of 3 peers in its own namespace and
# folder, each peer on its own link at 20 Mbit/s both ways (tc tbf). Prints the host's round table as
# it goes, then per round the peers' compute time beside their communication time, then a sample of
# text from the global model, as `make demo` does. Needs root; the namespaces are removed at the end.
# The folders stay in runs/demo-wan/ (host/run.toml is the demo's config with the bind and checkpoint
# folder for the namespaces; logs in host/host.log, peer-N/peer.log).
# ARCH_BIN_DIR picks the binaries (default ./build/bin); WAN_MBIT the link rate.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/wan/netns.sh
MBIT=${WAN_MBIT:-20}

[ "$(id -u)" -eq 0 ] || { echo "demo-wan needs root (network namespaces and tc): sudo make demo-wan"; exit 1; }
wan_setup 3 runs/demo-wan
cfg=$(wan_run_toml data/demo-run.toml)
for i in 1 2 3; do wan_shape "$i" "$MBIT"; done
wan_invite_peers 2> /dev/null
wan_start_host
for i in 1 2 3; do wan_start_peer "$i"; done
echo "host and 3 peers started in 4 namespaces, each peer's link at $MBIT Mbit/s; config $cfg"
echo "logs: $WAN_DIR/host/host.log, $WAN_DIR/peer-N/peer.log"

# The round table as the host prints it (bounded: the run's rounds take minutes, not hours).
shown=0
for ((k = 0; k < 36000; k++)); do
  n=$(wc -l < "$WAN_DIR/host/host.out")
  if ((n > shown)); then sed -n "$((shown + 1)),${n}p" "$WAN_DIR/host/host.out"; shown=$n; fi
  kill -0 "$WAN_HOST_PID" 2> /dev/null || break
  sleep 0.5
done
rc=0; wan_wait_pid "$WAN_HOST_PID" 60 || rc=$?
sed -n "$((shown + 1)),\$p" "$WAN_DIR/host/host.out"
wan_wait_peers 30 || true
[ "$rc" = 0 ] || wan_die "the host exited with $rc"

echo
echo "per round, mean over the peers (communication: upload, waiting for the others, the update):"
printf '%5s %10s %16s\n' round compute_s communication_s
for i in 1 2 3; do wan_round_times "$(wan_peer_log "$i")"; done |
  awk '{ c[$1] += $2; m[$1] += $3; n[$1]++; if ($1 > last) last = $1 }
       END { for (r = 0; r <= last; r++) if (n[r]) printf "%5d %10.2f %16.2f\n", r, c[r] / n[r], m[r] / n[r] }'
echo
echo "θ $(wan_host_theta) (host); checkpoint $WAN_DIR/host/run/model.bin"
echo
echo "=== sample from the global model ==="
ARCH_DATA_DIR=$WAN_DIR/host/data "$WAN_ARCH" sample --checkpoint "$WAN_DIR/host/run/model.bin" \
  --tokenizer "$WAN_DIR/host/data/corpus/kjv/tokenizer.bin" --prompt "And the LORD said" --tokens 120
