#!/usr/bin/env bash
# tests/wan/test_wan_membership.sh: membership while the run goes on, across namespaces. The host
# starts with 2 of its 3 islands invited (join_timeout_s 5); peer 3 is invited with `archipelago
# invite` while the run goes on, joins at a later round (the state and its own data assignment), and
# its θ matches the host's. Then `archipelago revoke --name peer-2`: the host cuts it off within about
# one heartbeat (3 s), later rounds go on without it, and a restarted peer-2 is refused at the
# handshake. Exit 77: not root, or no network namespaces.
set -euo pipefail
source "$(dirname "$0")/netns.sh"

CTL=7602
HEARTBEAT_S=3
wan_setup 3
cfg=$(wan_run_toml)
wan_toml_set "$cfg" run rounds 60   # an upper bound: the test stops the run when it has seen enough
wan_toml_set "$cfg" inner steps_per_round 10
wan_toml_set "$cfg" deadlines join_timeout_s 5
wan_toml_set "$cfg" deadlines heartbeat_timeout_s "$HEARTBEAT_S"
wan_invite_peer 1
wan_invite_peer 2
hd=$(wan_node_dir host)
tok=$hd/token
wan_start_host --control-port "$CTL" --token-file "$tok"
wan_start_peer 1
wan_start_peer 2
hev=$(wan_host_events)
wan_wait_event "$hev" 180 "$WAN_HOST_PID" round_started round=1 islands=2 || wan_die "the run did not start with 2 islands"

# A third peer, invited now.
wan_invite_peer 3
wan_wait_event "$hev" 10 "$WAN_HOST_PID" allow_list peer=peer-3 type=added || wan_die "the host did not take the new invite"
wan_start_peer 3
p3=$(wan_peer_events 3)
wan_wait_event "$p3" 180 "${WAN_PEER_PID[3]}" round_applied islands=3 || wan_die "peer 3 did not train a round with the others"
joined=$(wan_field "$p3" round_applied islands=3 -- round)
[ "$(wan_count "$p3" data_ready island=2)" = 1 ] || wan_die "peer 3 did not get island 2's data"
wan_log "peer 3, invited during the run, trained round $joined with the others; θ matches the host's"

# Revoke peer 2.
from=$(wan_lines "$hev")
(cd "$hd" && ARCH_DATA_DIR=$hd/data "$WAN_ARCH" revoke --config run.toml --name peer-2 > revoke.log 2>&1) ||
  wan_die "revoke failed: $(cat "$hd/revoke.log")"
t_revoke=$(date +%s.%N)
wan_wait_event "$hev" 10 "$WAN_HOST_PID" "$from" revoked peer=peer-2 || wan_die "the host did not cut peer-2 off within 10 s"
t_cut=$(wan_event_time "$hev" "$from" revoked peer=peer-2)
took=$(/usr/bin/python3 -c "print('%.1f' % ($t_cut - $t_revoke))")
/usr/bin/python3 -c "import sys; sys.exit(0 if $took <= $HEARTBEAT_S + 1.5 else 1)" ||
  wan_die "peer-2 was cut off $took s after the revoke (more than a heartbeat of $HEARTBEAT_S s and the 1 s check)"
wan_wait_pid "${WAN_PEER_PID[2]}" 30 && wan_die "peer-2 exited 0 after being revoked" || true
[ "$(wan_count "$(wan_peer_events 2)" left type=revoked)" = 1 ] || wan_die "peer-2 was not told it was revoked"
wan_log "peer-2 cut off $took s after the revoke, and told so"
wan_wait_event "$hev" 120 "$WAN_HOST_PID" "$from" round_started islands=2 || wan_die "no round went on with the 2 others"

# Restarted with the same key and invite, it does not get through the handshake: it is told so.
p2=$(wan_peer_events 2)
from2=$(wan_lines "$p2")
wan_start_peer 2
wan_wait_event "$p2" 20 "${WAN_PEER_PID[2]}" "$from2" key_refused || wan_die "the host did not refuse peer-2's reconnect"
[ "$(wan_count "$p2" "$from2" joined)" = 0 ] || wan_die "the revoked peer-2 was admitted again"
[ "$(wan_count "$hev" "$from" admitted peer=peer-2)" = 0 ] || wan_die "the host admitted the revoked peer-2 again"
wan_log "peer-2's reconnect was refused at the handshake"

[ "$(wan_api host "$CTL" "$tok" POST /api/leave | wan_json 'j.get("ok")')" = True ] || wan_die "POST /api/leave failed"
wan_wait_pid "$WAN_HOST_PID" 60 || true
for i in 1 3; do [ "$(wan_count "$(wan_peer_events "$i")" theta_differs)" = 0 ] || wan_die "peer $i: θ differed from the host's"; done
echo "PASS"
