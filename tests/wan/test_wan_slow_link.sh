#!/usr/bin/env bash
# tests/wan/test_wan_slow_link.sh: 3 peers on links of 20 Mbit/s both ways (tc tbf), a model of about
# 31.5M parameters (the tiny config widened: 4 layers of 768 channels) and an fp32 down codec, so the
# state (θ and momentum) takes ~110 s and each update (126 MB) ~55 s to move. No round may close, and
# no round may start, while an island's transfer is still moving: every round has all 3 islands, nobody
# is dropped for silence or a deadline, and every peer's θ matches the host's after both rounds. The
# transfers, as the kernel saw them on each link, are printed. Takes about 5 minutes. Exit 77: not root.
set -euo pipefail
source "$(dirname "$0")/netns.sh"

MBIT=${WAN_MBIT:-20}
ROUNDS=2
wan_setup 3
cfg=$(wan_run_toml)
wan_toml_set "$cfg" run rounds "$ROUNDS"
wan_toml_set "$cfg" model layers 4
wan_toml_set "$cfg" model channels 768
wan_toml_set "$cfg" model heads 12
wan_toml_set "$cfg" inner steps_per_round 4
wan_toml_set "$cfg" inner batch 2
wan_toml_set "$cfg" inner seq_len 32
wan_toml_set "$cfg" inner warmup 2
wan_toml_set "$cfg" inner val_batches 1
wan_toml_set "$cfg" wire down_codec '"fp32"'
for i in 1 2 3; do wan_shape "$i" "$MBIT"; done
wan_invite_peers
samples=$WAN_DIR/links.samples
wan_sampler_start "$samples"
t_start=$(date +%s.%N)
wan_start_host
for i in 1 2 3; do wan_start_peer "$i"; done
hev=$(wan_host_events)

wan_wait_pid "$WAN_HOST_PID" 840 || wan_die "the host did not finish within 840 s (exit $?)"
peers_left=$(wan_wait_peers 30) || true
t_end=$(date +%s.%N)
wan_sampler_stop

echo "round table (round islands seconds):"
wan_table_rows
for i in 1 2 3; do
  echo "peer-$i's link, as the kernel counted it (host-side veth):"
  wan_bursts "$samples" "$i" "$MBIT" | sed 's/^/  /'
done
for i in 1 2 3; do
  echo "peer-$i: $(grep -E "synced to round|round [0-9]+ applied|θ hash differs|lost the host" "$(wan_peer_log "$i")" | wan_msg | paste -sd';' | sed 's/;/; /g')"  # what it said, for people
done
echo "wall time: $(/usr/bin/python3 -c "print('%.0f' % ($t_end - $t_start))") s"

fails=()
[ -z "$peers_left" ] || fails+=("$peers_left (the host's bye never reached them)")
[ "$(wan_count "$hev" finished round="$ROUNDS")" = 1 ] || fails+=("the host did not finish $ROUNDS rounds")
[ "$(wan_table_rows | awk '$2 == 3' | wc -l)" = "$ROUNDS" ] || fails+=("not every one of the $ROUNDS rounds closed with 3 islands")
few=$(wan_events "$hev" round_started | wan_json_lines "j['islands']" | grep -v '^3$' | paste -sd, || true)
[ -z "$few" ] || fails+=("a round started with fewer than 3 islands ($few)")
cut=$(( $(wan_count "$hev" dropped) + $(wan_count "$hev" deadline_passed) ))
[ "$cut" = 0 ] || fails+=("the host dropped an island or closed a round by its deadline: $(wan_events "$hev" dropped; wan_events "$hev" deadline_passed)")
host_theta=$(wan_host_theta || true)
for i in 1 2 3; do
  pev=$(wan_peer_events "$i")
  for ((r = 0; r < ROUNDS; r++)); do
    [ "$(wan_count "$pev" sent round=$r)" = 1 ] || fails+=("peer $i did not train round $r")
    [ "$(wan_count "$pev" round_applied round=$r islands=3)" = 1 ] || fails+=("peer $i did not apply round $r with 3 islands, θ matching the host's")
  done
  last=$(wan_peer_theta "$i" $((ROUNDS - 1)) || true)
  [ -n "$last" ] && [ "$last" = "$host_theta" ] || fails+=("peer $i's final θ '${last}' is not the host's '${host_theta}'")
done
if ((${#fails[@]})); then
  printf 'FAIL: %s\n' "${fails[@]}" >&2
  wan_dump_logs
  exit 1
fi
echo "PASS"
