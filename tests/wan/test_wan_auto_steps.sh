#!/usr/bin/env bash
# tests/wan/test_wan_auto_steps.sh: H from the link (inner.steps_per_round = "auto") on the test network.
# A host and 3 peers in their own namespaces run overlapped rounds of the demo's tiny model on 100 Mbit/s
# links; once round 3 has started, every link is cut to 5 Mbit/s (tc tbf changed while the run goes on;
# its burst stays the 100 Mbit/s one, else a packet queued under it would block the slower link for
# good: netns.sh, wan_shape).
# The syncs then take many times longer, and the host must give the later rounds a larger H: the most H
# after the drop is at least 3 times the most before it. Every round's H stays within
# [auto_min_steps, auto_max_steps] and says why, in the run events, the round table, /api/status,
# /api/rounds and /metrics; every peer ends with the host's θ. Exit 77: not root, or no network namespaces.
set -euo pipefail
source "$(dirname "$0")/netns.sh"

ROUNDS=9
LO=2
HI=150
CTL=7610
wan_setup 3
cfg=$(wan_run_toml)
wan_toml_set "$cfg" run rounds "$ROUNDS"
wan_toml_set "$cfg" run mode '"overlap"'
wan_toml_set "$cfg" outer sync_moments_every 0
wan_toml_set "$cfg" inner steps_per_round '"auto"'
wan_toml_set "$cfg" inner auto_min_steps "$LO"
wan_toml_set "$cfg" inner auto_max_steps "$HI"
wan_toml_set "$cfg" inner warmup 2
for i in 1 2 3; do wan_shape "$i" 100; done
wan_invite_peers
hd=$(wan_node_dir host)
tok=$hd/token
wan_start_host --control-port "$CTL" --token-file "$tok"
for i in 1 2 3; do wan_start_peer "$i"; done
hev=$(wan_host_events)
api() { wan_api host "$CTL" "$tok" GET "$1"; }

wan_wait_event "$hev" 240 "$WAN_HOST_PID" round_started round=3 || wan_die "round 3 never started"
for i in 1 2 3; do wan_shape "$i" 5 125000; done
wan_log "links cut to 5 Mbit/s as round 3 started"
# While the run goes on: the H of the round in progress, and why, on the control API.
status=$(api /api/status)
h_now=$(echo "$status" | wan_json "j['steps_per_round']")
why_now=$(echo "$status" | wan_json "j['steps_why']")
metric=$(api /metrics | awk '$1 == "archipelago_steps_per_round" {print $2}')
rounds_json=$(api /api/rounds)

wan_wait_pid "$WAN_HOST_PID" 600 || wan_die "the host did not finish within 600 s"
wan_wait_peers 30 > /dev/null || true

echo "round (H, why):"
wan_events "$hev" round_started | wan_json_lines "'%d %d %s' % (j['round'], j['steps'], j['detail'])" | tee "$WAN_DIR/h.txt"
echo "round table (round islands seconds H):"
wan_table_rows

fails=()
[ "$(wan_count "$hev" finished round="$ROUNDS")" = 1 ] || fails+=("the host did not finish $ROUNDS rounds")
bad=$(awk -v lo="$LO" -v hi="$HI" '$2 < lo || $2 > hi' "$WAN_DIR/h.txt")
[ -z "$bad" ] || fails+=("an H outside [$LO, $HI]: $bad")
before=$(awk '$1 <= 3 {if ($2 > m) m = $2} END {print m + 0}' "$WAN_DIR/h.txt")
after=$(awk '$1 >= 5 {if ($2 > m) m = $2} END {print m + 0}' "$WAN_DIR/h.txt")
((after >= 3 * before)) || fails+=("H did not follow the slower link: at most $before before the cut, $after after it")
grep -q "^[0-9]* [0-9]* auto: a sync " "$WAN_DIR/h.txt" || fails+=("no round's H came from a measured sync")
[ "$(wan_table_rows | awk '{print $4}' | paste -sd' ')" = "$(awk '$1 < '"$ROUNDS"' {print $2}' "$WAN_DIR/h.txt" | paste -sd' ')" ] ||
  fails+=("the round table's H column is not the rounds' H")
[[ "$h_now" =~ ^[0-9]+$ ]] && ((h_now >= LO && h_now <= HI)) || fails+=("/api/status steps_per_round: '$h_now'")
[[ "$why_now" == auto:* ]] || fails+=("/api/status steps_why: '$why_now'")
[[ "$metric" =~ ^[0-9]+$ ]] && ((metric >= LO && metric <= HI)) || fails+=("/metrics archipelago_steps_per_round: '$metric'")
[ "$(echo "$rounds_json" | wan_json "all(r['steps'] >= $LO and r['steps_why'].startswith('auto') for r in j['rounds'])")" = True ] ||
  fails+=("/api/rounds: a round without its H and why: $rounds_json")
host_theta=$(wan_host_theta || true)
for i in 1 2 3; do
  [ "$(wan_peer_theta "$i" $((ROUNDS - 1)) || true)" = "$host_theta" ] || fails+=("peer $i does not end with the host's θ")
done
if ((${#fails[@]})); then
  printf 'FAIL: %s\n' "${fails[@]}" >&2
  wan_dump_logs
  exit 1
fi
echo "PASS: H followed the link (at most $before before the cut to 5 Mbit/s, $after after), within [$LO, $HI]"
