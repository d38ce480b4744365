#!/usr/bin/env bash
# tests/wan/test_wan_nat.sh: a host at home behind a router. Four namespaces: the host's LAN
# (192.168.77.2 and 2001:db8:77::2), a router that masquerades its IPv4 (nftables), routes its IPv6
# and runs Debian's real miniupnpd (UPnP IGD and NAT-PMP), an IPv4 "internet" (11.77.0.0/24, from
# which the LAN cannot be reached) with peers 1 and 2, and an IPv6-only network with peer 3. With
# run.nat = "auto" the host maps its port; invites made after that list the router's external address
# first, then the host's own (its LAN's, its IPv6), and each peer joins through the first it reaches,
# from the invite alone; the mapping is on the router while the run goes on and gone after the host
# exits. NAT-PMP maps it too, and a SIGTERM removes it. With miniupnpd stopped, nat = "auto" says "no
# gateway answered" and what to do, and waits; nat = "upnp" exits. Exit 77: not root, no network
# namespaces, no miniupnpd or nft.
set -euo pipefail
source "$(dirname "$0")/netns.sh"

command -v nft > /dev/null || wan_skip "needs nft (nftables)"
[ -x /usr/sbin/miniupnpd ] || wan_skip "needs miniupnpd (miniupnpd-nftables)"

# Peers 1 and 2 live in the internet namespace, peer 3 in an IPv6-only one; the host namespace is the
# LAN's machine.
wan_ns() {
  case $1 in host) echo "$WAN_TAG-host" ;; router) echo "$WAN_TAG-router" ;; 3|inet6) echo "$WAN_TAG-inet6" ;;
    *) echo "$WAN_TAG-inet" ;; esac
}

wan_setup 0
ROUTER=$(wan_ns router) INET=$(wan_ns inet) INET6=$(wan_ns inet6) LAN=$(wan_ns host)
for ns in "$ROUTER" "$INET" "$INET6"; do
  ip netns add "$ns" || wan_die "ip netns add $ns failed"
  WAN_NS_MADE+=("$ns")
  ip -n "$ns" link set lo up
done
wan_watchdog  # again: this one knows the router and the internet namespaces too
LAN_IF=aw${WAN_ID}l RL_IF=aw${WAN_ID}r RW_IF=aw${WAN_ID}w IN_IF=aw${WAN_ID}i R6_IF=aw${WAN_ID}6 I6_IF=aw${WAN_ID}v
ip link add "$LAN_IF" netns "$LAN" type veth peer name "$RL_IF" netns "$ROUTER" || wan_die "LAN veth"
ip link add "$RW_IF" netns "$ROUTER" type veth peer name "$IN_IF" netns "$INET" || wan_die "WAN veth"
ip link add "$R6_IF" netns "$ROUTER" type veth peer name "$I6_IF" netns "$INET6" || wan_die "IPv6 WAN veth"
ip -n "$LAN" addr add 192.168.77.2/24 dev "$LAN_IF"
ip -n "$ROUTER" addr add 192.168.77.1/24 dev "$RL_IF"
ip -n "$ROUTER" addr add 11.77.0.1/24 dev "$RW_IF"
ip -n "$INET" addr add 11.77.0.2/24 dev "$IN_IF"
# IPv6: the LAN has a global prefix, routed (not translated) to an IPv6-only network; no DAD wait.
ip -n "$LAN" addr add 2001:db8:77::2/64 dev "$LAN_IF" nodad
ip -n "$ROUTER" addr add 2001:db8:77::1/64 dev "$RL_IF" nodad
ip -n "$ROUTER" addr add 2001:db8:78::1/64 dev "$R6_IF" nodad
ip -n "$INET6" addr add 2001:db8:78::2/64 dev "$I6_IF" nodad
for pair in "$LAN $LAN_IF" "$ROUTER $RL_IF" "$ROUTER $RW_IF" "$INET $IN_IF" "$ROUTER $R6_IF" "$INET6 $I6_IF"; do
  set -- $pair
  ip -n "$1" link set "$2" up
done
ip -n "$LAN" route add default via 192.168.77.1
ip -n "$LAN" -6 route add default via 2001:db8:77::1
ip -n "$INET6" -6 route add default via 2001:db8:78::1
ip netns exec "$ROUTER" sysctl -qw net.ipv4.ip_forward=1
ip netns exec "$ROUTER" sysctl -qw net.ipv6.conf.all.forwarding=1
# The router: the LAN goes out masqueraded; from outside only what miniupnpd forwards comes in.
ip netns exec "$ROUTER" nft -f - << EOF || wan_die "the router's nftables rules"
table inet miniupnpd {
  chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    iifname "$RL_IF" accept
    ip6 daddr 2001:db8:77::2 tcp dport $WAN_PORT accept
    jump miniupnpd
  }
  chain miniupnpd { }
  chain prerouting {
    type nat hook prerouting priority -100; policy accept;
    jump prerouting_miniupnpd
  }
  chain postrouting {
    type nat hook postrouting priority 100; policy accept;
    jump postrouting_miniupnpd
    oifname "$RW_IF" masquerade
  }
  chain prerouting_miniupnpd { }
  chain postrouting_miniupnpd { }
}
EOF
cat > "$WAN_DIR/miniupnpd.conf" << EOF
ext_ifname=$RW_IF
listening_ip=$RL_IF
enable_upnp=yes
enable_natpmp=yes
secure_mode=yes
system_uptime=yes
uuid=3bd6e0a4-55d1-4f6c-9d34-7a0c3e2a1b77
upnp_table_name=miniupnpd
upnp_nat_table_name=miniupnpd
upnp_forward_chain=miniupnpd
upnp_nat_chain=prerouting_miniupnpd
upnp_nat_postrouting_chain=postrouting_miniupnpd
allow 1024-65535 192.168.77.0/24 1024-65535
deny 0-65535 0.0.0.0/0 0-65535
EOF
start_miniupnpd() {
  ip netns exec "$ROUTER" /usr/sbin/miniupnpd -d -f "$WAN_DIR/miniupnpd.conf" -P "$WAN_DIR/miniupnpd.pid" \
    >> "$WAN_DIR/miniupnpd.log" 2>&1 &
  MINIUPNPD_PID=$!
  WAN_PIDS+=("$MINIUPNPD_PID")
  wan_wait_for "$WAN_DIR/miniupnpd.log" "HTTP listening on port" 10 "$MINIUPNPD_PID" || wan_die "miniupnpd did not start"
}
router_rules() { ip netns exec "$ROUTER" nft list chain inet miniupnpd prerouting_miniupnpd 2> /dev/null | grep -c "dnat" || true; }
ip netns exec "$INET" bash -c "exec 3<> /dev/tcp/192.168.77.2/$WAN_PORT" 2> /dev/null &&
  wan_die "the internet reaches the LAN directly: this is not a NAT"

# 1. Mapped through miniupnpd; peers invited after the mapping join from the internet.
start_miniupnpd
cfg=$(wan_run_toml)
wan_toml_set "$cfg" run islands 3
wan_toml_set "$cfg" run rounds 2
wan_toml_set "$cfg" inner steps_per_round 5
hd=$(wan_node_dir host)
mkdir -p "$(wan_node_dir 1)/data" "$(wan_node_dir 2)/data" "$(wan_node_dir 3)/data"
invite_from_mapping() {  # wan_invite_peer without --endpoint, on the host's machine: the addresses it has
  local i=$1 pd; pd=$(wan_node_dir "$i")
  [ -f "$pd/peer.key" ] || (cd "$pd" && ARCH_DATA_DIR=$pd/data "$WAN_ARCH" keygen --out peer.key > /dev/null) ||
    wan_die "keygen peer $i"
  cp "$pd/peer.key.pub" "$hd/peer-$i.key.pub"
  (cd "$hd" && ARCH_DATA_DIR=$hd/data ip netns exec "$LAN" "$WAN_ARCH" invite --config run.toml --peer-key "peer-$i.key.pub" \
    --name "peer-$i" --out "peer-$i.invite" > /dev/null) || wan_die "invite peer $i"
  cp "$hd/peer-$i.invite" "$pd/peer.invite"
}
# The allow-list must exist before the host starts: a first invite, replaced after the mapping.
invite_from_mapping 1
wan_start_host
hev=$(wan_host_events)
wan_wait_event "$hev" 30 "$WAN_HOST_PID" reachability type=mapped || wan_die "the host did not map its port: $(grep reachability "$(wan_host_log)" | tail -n 2)"
grep -q "^endpoint = 'tcp://11.77.0.1:$WAN_PORT'$" "$hd/run/host.reachable" || wan_die "host.reachable: $(cat "$hd/run/host.reachable")"
[ "$(router_rules)" -ge 1 ] || wan_die "the router holds no forward for the host"
wan_log "the host mapped tcp://11.77.0.1:$WAN_PORT; the router forwards it"
for i in 1 2 3; do
  invite_from_mapping "$i"
  inv=$(wan_node_dir "$i")/peer.invite
  grep -q "host-endpoint = 'tcp://11.77.0.1:$WAN_PORT'" "$inv" || wan_die "peer $i's invite does not lead with the mapped address: $(cat "$inv")"
  grep -q "tcp://\[2001:db8:77::2\]:$WAN_PORT" "$inv" || wan_die "peer $i's invite lacks the host's IPv6 address: $(cat "$inv")"
done
for i in 2 3; do
  wan_wait_event "$hev" 10 "$WAN_HOST_PID" allow_list peer=peer-$i type=added || wan_die "the host did not take peer $i's invite"
done
for i in 1 2 3; do wan_start_peer "$i"; done
wan_wait_pid "$WAN_HOST_PID" 300 || wan_die "the run did not finish"
[ "$(wan_count "$hev" round_started islands=3)" = 2 ] || wan_die "the run did not train its 2 rounds with all 3 peers"
grep -q "host reachable at tcp://11.77.0.1:$WAN_PORT" "$(wan_peer_log 1)" || wan_die "peer 1 did not join through the mapped address"
grep -q "host reachable at tcp://\[2001:db8:77::2\]:$WAN_PORT" "$(wan_peer_log 3)" ||
  wan_die "the IPv6-only peer did not join through the host's IPv6 address: $(grep host "$(wan_peer_log 3)" | head -n 5)"
# The host names the address each came in on, as its kernel has it: the mapped peers reach its LAN
# address through the router's forward, from the internet side; the IPv6 one its own IPv6 address.
grep -q "admitted peer-1 .*came in on 192.168.77.2:$WAN_PORT from 11.77.0.2:" "$(wan_host_log)" ||
  wan_die "the host did not say peer 1 came in through the router: $(grep admitted "$(wan_host_log)")"
grep -q "admitted peer-3 .*came in on \[2001:db8:77::2\]:$WAN_PORT from \[2001:db8:78::2\]:" "$(wan_host_log)" ||
  wan_die "the host did not say peer 3 came in on its IPv6 address: $(grep admitted "$(wan_host_log)")"
for i in 1 2 3; do
  wan_wait_pid "${WAN_PEER_PID[$i]}" 30 || wan_die "peer $i did not finish"
  [ "$(wan_count "$(wan_peer_events "$i")" theta_differs)" = 0 ] || wan_die "peer $i: θ differed from the host's"
done
[ "$(router_rules)" = 0 ] || wan_die "the mapping is still on the router after the host exited"
wan_log "peers 1-2 trained through the router's mapped address, peer 3 (IPv6 only) through the host's IPv6 address; the mapping is gone after the host's exit"

# 2. NAT-PMP (nat = "natpmp", miniupnpd answers it too); a host stopped by SIGTERM while it waits for
# islands removes its mapping.
rm "$hd/run/host.state"  # a new run (the last one finished): the host waits for its islands
wan_toml_set "$cfg" run nat '"natpmp"'
from=$(wan_lines "$hev")
wan_start_host
wan_wait_event "$hev" 30 "$WAN_HOST_PID" "$from" reachability type=mapped || wan_die "NAT-PMP did not map the port"
grep -q "NAT-PMP mapped tcp://11.77.0.1:$WAN_PORT" "$(wan_host_log)" || wan_die "the host did not say NAT-PMP mapped it"
[ "$(router_rules)" -ge 1 ] || wan_die "the router holds no forward for the second host"
kill -TERM "$WAN_HOST_PID"; wan_wait_pid "$WAN_HOST_PID" 30 || true
[ "$(router_rules)" = 0 ] || wan_die "the mapping is still on the router after SIGTERM"
wan_log "NAT-PMP mapped it too; after SIGTERM the mapping is gone"

# 3. No gateway: auto says so, with what to do, and waits; upnp exits.
kill -TERM "$MINIUPNPD_PID"; wan_wait_pid "$MINIUPNPD_PID" 10 || true
wan_toml_set "$cfg" run nat '"auto"'
from=$(wan_lines "$hev")
wan_start_host
wan_wait_event "$hev" 30 "$WAN_HOST_PID" "$from" reachability type="no gateway answered" ||
  wan_die "no 'no gateway answered' with nat = auto"
grep -q "forward TCP port $WAN_PORT on your router" "$(wan_host_log)" || wan_die "the host gave no manual steps"
kill -0 "$WAN_HOST_PID" 2> /dev/null || wan_die "with nat = auto the host did not wait for peers"
kill -TERM "$WAN_HOST_PID"; wan_wait_pid "$WAN_HOST_PID" 30 || true
wan_toml_set "$cfg" run nat '"upnp"'
wan_start_host
wan_wait_pid "$WAN_HOST_PID" 30 && wan_die "with nat = upnp and no gateway the host exited 0" || true
kill -0 "$WAN_HOST_PID" 2> /dev/null && wan_die "with nat = upnp and no gateway the host did not exit"
grep -q "insists on a mapping" "$(wan_host_log)" || wan_die "the host did not say why it stopped"
wan_log "no gateway: auto waited with the manual steps, upnp exited"
echo "PASS"
