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
hlog=$(wan_host_log)
wan_wait_for "$hlog" "round 1 started with 2 islands" 180 "$WAN_HOST_PID" || wan_die "the run did not start with 2 islands"

# A third peer, invited now.
wan_invite_peer 3
wan_wait_for "$hlog" "allow-list: peer-3 .* may join now" 10 "$WAN_HOST_PID" || wan_die "the host did not take the new invite"
wan_start_peer 3
p3=$(wan_peer_log 3)
wan_wait_for "$p3" "round [0-9]+ applied \(3 islands.* matches the host" 180 "${WAN_PEER_PID[3]}" ||
  wan_die "peer 3 did not train a round with the others"
joined=$(grep -oE "round [0-9]+ applied \(3 islands" "$p3" | head -n 1 | grep -oE '[0-9]+' | head -n 1)
grep -q "data: island 2 trains on" "$p3" || wan_die "peer 3 did not get island 2's data"
wan_log "peer 3, invited during the run, trained round $joined with the others; θ matches the host's"

# Revoke peer 2.
mark=$(wc -l < "$hlog")
(cd "$hd" && ARCH_DATA_DIR=$hd/data "$WAN_ARCH" revoke --config run.toml --name peer-2 > revoke.log 2>&1) ||
  wan_die "revoke failed: $(cat "$hd/revoke.log")"
t_revoke=$(date +%s.%N)
for ((k = 0; k < 100; k++)); do tail -n +"$((mark + 1))" "$hlog" | grep -q "revoked peer-2" && break; sleep 0.1; done
tail -n +"$((mark + 1))" "$hlog" | grep -q "revoked peer-2" || wan_die "the host did not cut peer-2 off within 10 s"
t_cut=$(wan_log_time <(tail -n +"$((mark + 1))" "$hlog") "revoked peer-2")
took=$(/usr/bin/python3 -c "print('%.1f' % ($t_cut - $t_revoke))")
/usr/bin/python3 -c "import sys; sys.exit(0 if $took <= $HEARTBEAT_S + 1.5 else 1)" ||
  wan_die "peer-2 was cut off $took s after the revoke (more than a heartbeat of $HEARTBEAT_S s and the 1 s check)"
wan_wait_pid "${WAN_PEER_PID[2]}" 30 && wan_die "peer-2 exited 0 after being revoked" || true
grep -q "the host revoked this peer's key" "$(wan_peer_log 2)" || wan_die "peer-2 was not told it was revoked"
wan_log "peer-2 cut off $took s after the revoke, and told so"
for ((k = 0; k < 600; k++)); do tail -n +"$((mark + 1))" "$hlog" | grep -q "started with 2 islands" && break; sleep 0.2; done
tail -n +"$((mark + 1))" "$hlog" | grep -q "started with 2 islands" || wan_die "no round went on with the 2 others"

# Restarted with the same key and invite, it does not get through the handshake.
mark=$(wc -l < "$hlog")
mv "$(wan_peer_log 2)" "$(wan_node_dir 2)/peer.first.log"
wan_start_peer 2
for ((k = 0; k < 100; k++)); do tail -n +"$((mark + 1))" "$hlog" | grep -q "is not on the allow-list" && break; sleep 0.2; done
tail -n +"$((mark + 1))" "$hlog" | grep -q "is not on the allow-list" || wan_die "the host did not refuse peer-2's reconnect"
! grep -q "joined as island" "$(wan_peer_log 2)" || wan_die "the revoked peer-2 was admitted again"
wan_log "peer-2's reconnect was refused at the handshake"

[ "$(wan_api host "$CTL" "$tok" POST /api/leave | wan_json 'j.get("ok")')" = True ] || wan_die "POST /api/leave failed"
wan_wait_pid "$WAN_HOST_PID" 60 || true
for i in 1 3; do ! grep -q "θ hash differs" "$(wan_peer_log "$i")" || wan_die "peer $i: θ differed from the host's"; done
echo "PASS"
