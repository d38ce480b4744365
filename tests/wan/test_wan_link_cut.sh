#!/usr/bin/env bash
# tests/wan/test_wan_link_cut.sh: a host and 3 peers in their own namespaces; in the middle of round 1
# peer 3's link goes down for 90 s (both veth ends), then comes back. The host must close that round
# with the 2 others within its deadline (heartbeat timeout 3 s, round timeout 60 s); peer 3 must
# reconnect, resync to the host's state, train two later rounds with the others again, and its θ must
# match the host's after each. The run is stopped (POST /api/leave) once that is seen.
# Exit 77: not root, or no network namespaces.
set -euo pipefail
source "$(dirname "$0")/netns.sh"

CUT_S=${WAN_CUT_S:-90}
ROUND_TIMEOUT_S=60
CTL=7601
CUT=3
wan_setup 3
cfg=$(wan_run_toml)
wan_toml_set "$cfg" run rounds 200  # an upper bound, past the cut at any round time: the test stops the run when it has seen enough
wan_toml_set "$cfg" deadlines heartbeat_timeout_s 3
wan_toml_set "$cfg" deadlines round_timeout_s "$ROUND_TIMEOUT_S"
wan_invite_peers
hd=$(wan_node_dir host)
tok=$hd/token
wan_start_host --control-port "$CTL" --token-file "$tok"
for i in 1 2 3; do wan_start_peer "$i"; done
hev=$(wan_host_events)
pev=$(wan_peer_events "$CUT")

wan_wait_event "$pev" 240 "${WAN_PEER_PID[$CUT]}" progress round=1 steps=10 || wan_die "peer $CUT never reached round 1 step 10"
wan_link_down "$CUT"
t_cut=$(date +%s.%N)
wan_log "peer $CUT's link is down for $CUT_S s (in round 1)"
wan_wait_event "$hev" 30 "$WAN_HOST_PID" dropped round=1 peer=peer-$CUT type=disconnected ||
  wan_die "the host did not drop peer $CUT from round 1"
wan_wait_event "$hev" "$ROUND_TIMEOUT_S" "$WAN_HOST_PID" round_started round=2 || wan_die "round 1 did not close within $ROUND_TIMEOUT_S s"
t_closed=$(wan_event_time "$hev" round_started round=2)
closed_after=$(/usr/bin/python3 -c "print('%.1f' % ($t_closed - $t_cut))")
# The row goes out once the evaluation of its θ, beside the rounds, is in.
wan_wait_event "$hev" 60 "$WAN_HOST_PID" round_finished round=1 || wan_die "round 1's row never came"
row1=$(wan_table_rows | awk '$1 == 1')
[ "$(echo "$row1" | awk '{print $2}')" = 2 ] || wan_die "round 1 closed with '$row1' (round islands seconds), expected 2 islands"
wan_log "round 1 closed with 2 islands $closed_after s after the cut"

# The rest of the cut: the 2 others go on.
sleep_left=$(/usr/bin/python3 -c "print(max(0.0, $t_cut + $CUT_S - $(date +%s.%N)))")
sleep "$sleep_left"
wan_link_up "$CUT"
t_up=$(date +%s.%N)
from=$(wan_lines "$pev")
rows_before=$(wan_table_rows | wc -l)
wan_log "peer $CUT's link is up again after the host closed $rows_before rounds"

# Back: reconnect (or a fresh connection), the state, then a round it trained and whose update matches.
wan_wait_event "$pev" 120 "${WAN_PEER_PID[$CUT]}" "$from" synced ||
  wan_die "peer $CUT did not resync within 120 s of the link coming back"
sync_round=$(wan_field "$pev" "$from" synced -- round)
t_sync=$(wan_event_time "$pev" "$from" synced)
wan_log "peer $CUT resynced to round $sync_round, $(/usr/bin/python3 -c "print('%.1f' % ($t_sync - $t_up))") s after link up"
# It must stay: two rounds trained with all 3 islands after it came back, each ending with θ matching.
contributed=""
for ((k = 0; k < 900; k++)); do
  contributed=""
  for r in $(wan_events "$pev" "$from" sent | wan_json_lines "j['round']"); do
    [ -n "$(wan_events "$pev" "$from" round_applied "round=$r" islands=3)" ] && contributed+="${contributed:+,}$r"
  done
  [[ "$contributed" == *,* ]] && break
  kill -0 "$WAN_HOST_PID" 2> /dev/null || break
  sleep 0.2
done
[[ "$contributed" == *,* ]] || wan_die "peer $CUT did not train 2 rounds with the others after rejoining (rounds: '$contributed'); rounds after the cut (round islands seconds): $(wan_table_rows | awk -v n="$rows_before" 'NR > n' | paste -sd,)"
[ "$(wan_count "$pev" "$from" theta_differs)" = 0 ] || wan_die "peer $CUT's θ differed from the host's after rejoining"
wan_log "peer $CUT trained rounds $contributed with the others again; its θ after each matches the host's"

[ "$(wan_api host "$CTL" "$tok" POST /api/leave | wan_json 'j.get("ok")')" = True ] || wan_die "POST /api/leave failed"
rc=0; wan_wait_pid "$WAN_HOST_PID" 60 || rc=$?
# A host told to leave exits 1 ("stopped": the run did not finish), 124 here if it did not stop at all.
[ "$rc" != 124 ] && [ "$(wan_count "$hev" stopped)" = 1 ] || wan_die "the host did not stop after POST /api/leave (exit $rc)"
wan_wait_peers 30 || true

for i in 1 2; do
  [ "$(wan_count "$(wan_peer_events "$i")" theta_differs)" = 0 ] || wan_die "peer $i: θ differed from the host's"
done
echo "round table (round islands seconds):"
wan_table_rows
n2=$(wan_table_rows | awk '$2 == 2' | wc -l)
echo "cut at round 1 for $CUT_S s: round 1 closed with 2 islands $closed_after s after the cut; $n2 rounds with 2 islands;"
echo "peer $CUT resynced to round $sync_round and trained rounds $contributed with the others, θ matching the host's"
echo "PASS"
