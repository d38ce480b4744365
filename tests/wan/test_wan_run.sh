#!/usr/bin/env bash
# tests/wan/test_wan_run.sh: a host and 3 peers, each in its own network namespace and folder, finish
# a sync DiLoCo run (the demo's tiny model, 3 rounds); every peer's θ matches the host's after every
# round and at the end. The training data is the host's own shards, named in run.toml by paths
# relative to the host's folder (they resolve nowhere else): each peer fetches its assignment from the
# host into its own working directory. With WAN_LOCAL_DATA=1 each peer holds a copy of the shards under
# other names (--data mydata) and fetches nothing. Then the bytes: the host's own count of its frames to and from each peer
# (/api/peers wire_bytes_sent/received) against the kernel's count on that peer's veth.
# The byte snapshot is taken while the run is paused between rounds 1 and 2 (POST /api/pause), when
# nothing but heartbeats moves. Exit 77: not root, or no network namespaces.
set -euo pipefail
source "$(dirname "$0")/netns.sh"

ROUNDS=3
CTL=7600
wan_setup 3
cfg=$(wan_run_toml)
wan_toml_set "$cfg" run rounds "$ROUNDS"
hd=$(wan_node_dir host)
# The host's data set: prepared on the host's side only, named by relative paths.
(cd "$hd" && ARCH_DATA_DIR=$hd/data "$WAN_ARCH" prepare --input "$WAN_ROOT/data/kjv.txt.zst" --out shards --vocab 4096 \
  > prepare.log 2>&1) || wan_die "prepare: $(tail -3 "$hd/prepare.log")"
wan_toml_set "$cfg" data train '"shards/train_*.bin"'
wan_toml_set "$cfg" data val '"shards/val_*.bin"'
wan_toml_set "$cfg" model vocab 4096
peer_args=()
if [ "${WAN_LOCAL_DATA:-0}" = 1 ]; then
  for i in 1 2 3; do
    mkdir -p "$(wan_node_dir "$i")/mydata"
    for f in "$hd"/shards/train_*.bin; do cp "$f" "$(wan_node_dir "$i")/mydata/copy-of-$(basename "$f")"; done
  done
  peer_args=(--data mydata)
fi
wan_invite_peers
tok=$hd/token
wan_start_host --control-port "$CTL" --token-file "$tok"
for i in 1 2 3; do wan_start_peer "$i" "${peer_args[@]}"; done
hev=$(wan_host_events)
api() { wan_api host "$CTL" "$tok" "$@"; }

# Pause as soon as round 1 starts: the host finishes it and starts no new one.
wan_wait_event "$hev" 180 "$WAN_HOST_PID" round_started round=1 islands=3 || wan_die "round 1 did not start with 3 islands"
[ "$(api POST /api/pause | wan_json 'j.get("ok")')" = True ] || wan_die "POST /api/pause failed"
for i in 1 2 3; do
  wan_wait_event "$(wan_peer_events "$i")" 120 "${WAN_PEER_PID[$i]}" round_applied round=1 ||
    wan_die "peer $i did not apply round 1"
done
synced=0
for ((k = 0; k < 50; k++)); do
  peers=$(api GET /api/peers)
  if [ "$(echo "$peers" | wan_json 'sum(1 for p in j["peers"] if p["in_sync"] and p["connected"])')" = 3 ]; then synced=1; break; fi
  sleep 0.2
done
[ "$synced" = 1 ] || wan_die "the peers are not all in sync after round 1: $peers"
# Until the links are quiet (the last hash reports' ACKs landed; only heartbeats move): the kernel's
# counters of all three move by less than 2 KB over 0.2 s, for at most 10 s.
declare -A KRX KTX
for ((k = 0; k < 50; k++)); do
  quiet=1
  for i in 1 2 3; do
    read -r rx tx < <(wan_veth_bytes "$i")
    if [ -n "${KRX[$i]:-}" ] && [ $((rx + tx - KRX[$i] - KTX[$i])) -ge 2048 ]; then quiet=0; fi
    [ -z "${KRX[$i]:-}" ] && quiet=0
    KRX[$i]=$rx; KTX[$i]=$tx
  done
  [ "$quiet" = 1 ] && break
  sleep 0.2
done
peers=$(api GET /api/peers)
[ "$(api POST /api/resume | wan_json 'j.get("ok")')" = True ] || wan_die "POST /api/resume failed"

wan_wait_pid "$WAN_HOST_PID" 180 || wan_die "the host did not finish (exit $?)"
for i in 1 2 3; do wan_wait_pid "${WAN_PEER_PID[$i]}" 30 || wan_die "peer $i exited with $?"; done

# θ: every round applied and matching on every peer, and the last one equal to the host's final hash.
[ "$(wan_count "$hev" finished round="$ROUNDS")" = 1 ] || wan_die "the host did not finish $ROUNDS rounds"
host_theta=$(wan_host_theta)
[ -n "$host_theta" ] || wan_die "the host made no update"
[ "$(wan_table_rows | awk '$2 == 3' | wc -l)" = "$ROUNDS" ] || wan_die "the round table does not have $ROUNDS rows of 3 islands"
for i in 1 2 3; do
  pev=$(wan_peer_events "$i")
  [ "$(wan_count "$pev" theta_differs)" = 0 ] || wan_die "peer $i: θ differed from the host's"
  for ((r = 0; r < ROUNDS; r++)); do
    [ "$(wan_count "$pev" round_applied round=$r)" = 1 ] || wan_die "peer $i: round $r was not applied with θ matching the host's"
  done
  last=$(wan_peer_theta "$i" $((ROUNDS - 1)))
  [ "$last" = "$host_theta" ] || wan_die "peer $i ends at θ $last, the host at $host_theta"
done
echo "θ: 3 peers matched the host after each of $ROUNDS rounds; final θ $host_theta"

# Data: fetched from the host, or found under --data, and kept in the peer's own working directory.
for i in 1 2 3; do
  pd=$(wan_node_dir "$i")
  [ ! -e "$pd/shards" ] || wan_die "peer $i has a shards/ folder: it used a host path"
  ls "$pd"/data/peers/*/data/island-*.bin > /dev/null 2>&1 || wan_die "peer $i has no island shard in its working directory"
  fetched=$(wan_field "$(wan_peer_events "$i")" data_ready -- bytes)
  [ -n "$fetched" ] || wan_die "peer $i did not assemble its island's data"
  if [ "${WAN_LOCAL_DATA:-0}" = 1 ]; then
    [ "$fetched" = 0 ] || wan_die "peer $i fetched $fetched bytes although it holds the data set"
  else
    [ "$fetched" -gt 0 ] || wan_die "peer $i did not fetch its assignment"
  fi
done
echo "data: $([ "${WAN_LOCAL_DATA:-0}" = 1 ] && echo "found by hash under --data, nothing fetched" || echo "each peer fetched its assignment from the host")"
cat "$hd/host.out"

# Bytes: the host's figure against the kernel's, per peer link, at the paused snapshot.
has_fields=$(echo "$peers" | wan_json 'all("wire_bytes_sent" in p and "wire_bytes_received" in p for p in j["peers"])')
printf '%-7s %14s %14s %14s %14s %8s %8s %8s\n' peer host_sent kernel_tx host_received kernel_rx tx/sent rx/recv ratio
bad=0
for i in 1 2 3; do
  row=$(echo "$peers" | wan_json "[p for p in j['peers'] if p['name'] == 'peer-$i'][0]")
  if [ "$has_fields" = True ]; then
    hs=$(echo "$row" | wan_json 'j["wire_bytes_sent"]'); hr=$(echo "$row" | wan_json 'j["wire_bytes_received"]')
  else
    hs=$(echo "$row" | wan_json 'j["bytes_down"]'); hr=$(echo "$row" | wan_json 'j["bytes_up"]')
  fi
  read -r rtx rrx ratio < <(/usr/bin/python3 -c "r = lambda k, h: '%.4f' % (k / max(h, 1))
print(r(${KTX[$i]}, $hs), r(${KRX[$i]}, $hr), r(${KRX[$i]} + ${KTX[$i]}, $hs + $hr))")
  printf '%-7s %14s %14s %14s %14s %8s %8s %8s\n' "peer-$i" "$hs" "${KTX[$i]}" "$hr" "${KRX[$i]}" "$rtx" "$rrx" "$ratio"
  /usr/bin/python3 -c "import sys; sys.exit(0 if 1.00 <= $ratio <= 1.10 else 1)" || bad=1
done
echo "(ratio = kernel rx+tx on the host-side veth / the host's bytes to+from that peer; asserted in [1.00, 1.10])"
if [ "$has_fields" != True ]; then
  echo "SKIPPED the byte check: /api/peers has no wire_bytes_sent/wire_bytes_received yet; the table shows"
  echo "bytes_down/bytes_up (payloads only) where the wire figures would go. It would assert 1.00 <= ratio <= 1.10."
  exit 0
fi
[ "$bad" = 0 ] || wan_die "kernel/host byte ratio outside [1.00, 1.10]"
echo "PASS"
