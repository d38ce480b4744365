# tests/wan/netns.sh: a test network of Linux network namespaces, sourced by tests/wan/test_*.sh,
# bench/wan/run.sh and scripts/demo_wan.sh. One host namespace and N peer namespaces, one veth pair per
# peer (host side 10.77.I.1, peer side 10.77.I.2), so each peer's link can be shaped, cut and counted alone.
# It touches nothing outside the namespaces and the temp folder it makes; wan_setup arms a trap that
# removes both on exit, failure, SIGINT or SIGTERM (ctest's timeout). Needs root; skips (77) otherwise.
#
# Nodes share nothing: each runs in its own namespace, its own folder ($WAN_DIR/host, $WAN_DIR/peer-I)
# and its own ARCH_DATA_DIR (that folder's data/). Keys, invites and public keys are copied between
# folders as a user would send them. Every wait is bounded in count and in time.

WAN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ARCH_BIN_DIR=${ARCH_BIN_DIR:-./build/bin}
case $ARCH_BIN_DIR in /*) ;; *) ARCH_BIN_DIR=$WAN_ROOT/$ARCH_BIN_DIR ;; esac
WAN_ARCH=$ARCH_BIN_DIR/archipelago
# Shipped files (the bundled corpus) come from this checkout, whichever bin dir runs.
export ARCH_HOME=${ARCH_HOME:-$WAN_ROOT}
WAN_PREFIX=awan             # namespaces are awan-PID-host, awan-PID-pI
WAN_ID=$$                   # this run: names of namespaces and veths carry it
WAN_TAG=awan-$WAN_ID
WAN_PORT=${WAN_PORT:-5555}  # the host's port inside its namespace
WAN_ENDPOINT_PORT=""        # the port invites carry: WAN_PORT, or the latency proxy's (wan_start_proxy)
WAN_KEEP_DIR=""             # set by wan_setup N DIR: the node folders stay after the run
WAN_N=0
WAN_DIR=""
WAN_PIDS=()
WAN_PEER_PID=()             # WAN_PEER_PID[I]: peer I's process
WAN_NS_MADE=()

wan_log() { echo "[wan $(date +%T)] $*" >&2; }
wan_skip() { echo "SKIP: $*"; exit 77; }
wan_die() {
  echo "FAIL: $*" >&2
  wan_dump_logs
  exit 1
}

wan_ns() { if [ "$1" = host ]; then echo "$WAN_TAG-host"; else echo "$WAN_TAG-p$1"; fi; }
wan_host_veth() { echo "aw${WAN_ID}h$1"; }   # inside the host namespace; at most 15 characters
wan_peer_veth() { echo "aw${WAN_ID}p$1"; }   # inside peer I's namespace
wan_host_addr() { echo "10.77.$1.1"; }
wan_peer_addr() { echo "10.77.$1.2"; }
wan_node_dir() { if [ "$1" = host ]; then echo "$WAN_DIR/host"; else echo "$WAN_DIR/peer-$1"; fi; }
wan_exec() { local node=$1; shift; ip netns exec "$(wan_ns "$node")" "$@"; }

# Namespaces of earlier runs whose process is gone (a killed test cannot clean up after itself).
wan_remove_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$WAN_PREFIX-[0-9]*-" || true); do
    pid=${ns#"$WAN_PREFIX"-}; pid=${pid%%-*}
    if [ "$pid" != $$ ] && ! kill -0 "$pid" 2>/dev/null; then
      wan_kill_ns "$ns"
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
}

# wan_kill_ns NS...: ends the processes running in these namespaces of ours (ours by construction):
# SIGTERM to all, up to 5 s for them to exit, then SIGKILL to what is left.
wan_kill_ns() {
  local pids k p
  pids=$(wan_ns_pids "$@")
  for p in $pids; do kill -TERM "$p" 2> /dev/null || true; done
  for ((k = 0; k < 25; k++)); do
    pids=$(wan_ns_pids "$@")
    [ -n "$pids" ] || return 0
    sleep 0.2
  done
  for p in $pids; do kill -KILL "$p" 2> /dev/null || true; done
}
wan_ns_pids() { local ns; for ns in "$@"; do ip netns pids "$ns" 2> /dev/null || true; done; }

# A test killed with SIGKILL (no trap runs) must not leave its nodes running: a detached watchdog
# waits (at most 4 h) for this shell to end, then ends what runs in its namespaces and deletes them,
# and the temp folder unless it was kept (no .wan-temp marker).
wan_watchdog() {
  (setsid bash -c '
    parent=$1 dir=$2; shift 2
    for ((k = 0; k < 14400; k++)); do kill -0 "$parent" 2> /dev/null || break; sleep 1; done
    kill -0 "$parent" 2> /dev/null && exit 0
    for ns in "$@"; do
      for p in $(ip netns pids "$ns" 2> /dev/null); do kill -KILL "$p" 2> /dev/null; done
      ip netns del "$ns" 2> /dev/null
    done
    [ -f "$dir/.wan-temp" ] && rm -rf "$dir"
    exit 0' wan-watchdog $$ "$WAN_DIR" "${WAN_NS_MADE[@]}" < /dev/null > /dev/null 2>&1 &)
}

wan_cleanup() {
  local rc=$? ns
  trap - EXIT INT TERM
  for p in "${WAN_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wan_kill_ns "${WAN_NS_MADE[@]}"
  for ns in "${WAN_NS_MADE[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  if [ -n "$WAN_DIR" ] && [ -d "$WAN_DIR" ]; then
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -n "${WAN_KEEP_ON_FAIL:-}" ]; then
      rm -f "$WAN_DIR/.wan-temp"
      echo "wan: kept $WAN_DIR (WAN_KEEP_ON_FAIL)" >&2
    elif [ -z "${WAN_KEEP:-}" ] && [ -z "$WAN_KEEP_DIR" ]; then
      rm -rf "$WAN_DIR"
    else
      rm -f "$WAN_DIR/.wan-temp"
      echo "wan: node folders kept in $WAN_DIR" >&2
    fi
  fi
  exit "$rc"
}

# wan_setup N [DIR]: a host namespace and N peer namespaces, linked, lo up, node folders made under a
# fresh temp folder (removed at exit), or under DIR (emptied first, kept at exit).
wan_setup() {
  WAN_N=$1 WAN_KEEP_DIR=${2:-}
  [ "$(id -u)" -eq 0 ] || wan_skip "needs root (ip netns, tc)"
  command -v ip > /dev/null || wan_skip "needs iproute2 (ip)"
  [ -x "$WAN_ARCH" ] || wan_die "no $WAN_ARCH (set ARCH_BIN_DIR)"
  trap wan_cleanup EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  wan_remove_stale
  local hns i
  hns=$(wan_ns host)
  ip netns add "$hns" 2> /dev/null || wan_skip "'ip netns add' failed (no network namespaces here)"
  WAN_NS_MADE+=("$hns")
  ip -n "$hns" link set lo up
  for ((i = 1; i <= WAN_N; i++)); do
    local pns; pns=$(wan_ns "$i")
    ip netns add "$pns" || wan_die "ip netns add $pns failed"
    WAN_NS_MADE+=("$pns")
    ip -n "$pns" link set lo up
    ip link add "$(wan_host_veth "$i")" netns "$hns" type veth peer name "$(wan_peer_veth "$i")" netns "$pns" ||
      wan_die "veth for peer $i failed"
    ip -n "$hns" addr add "$(wan_host_addr "$i")/24" dev "$(wan_host_veth "$i")"
    ip -n "$pns" addr add "$(wan_peer_addr "$i")/24" dev "$(wan_peer_veth "$i")"
    ip -n "$hns" link set "$(wan_host_veth "$i")" up
    ip -n "$pns" link set "$(wan_peer_veth "$i")" up
  done
  if [ -n "$WAN_KEEP_DIR" ]; then
    WAN_DIR=$(mkdir -p "$WAN_KEEP_DIR" && cd "$WAN_KEEP_DIR" && pwd)
    rm -rf "${WAN_DIR:?}"/host "$WAN_DIR"/peer-*
  else
    WAN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$WAN_TAG.XXXXXX")
  fi
  mkdir -p "$(wan_node_dir host)/data"
  for ((i = 1; i <= WAN_N; i++)); do mkdir -p "$(wan_node_dir "$i")/data"; done
  for ((i = 1; i <= WAN_N; i++)); do wan_wait_link_up "$i" || wan_die "peer $i's link did not come up"; done
  [ -n "$WAN_KEEP_DIR" ] || : > "$WAN_DIR/.wan-temp"
  wan_watchdog
  wan_log "network: host + $WAN_N peers ($WAN_TAG), nodes in $WAN_DIR"
}

# wan_shape PEER MBIT [BURST]: token bucket on both ends' egress (peer side = uplink, host side =
# downlink). Burst: 10 ms at the rate but at least 64 KiB (a GSO packet must fit), or BURST bytes;
# queue: 100 ms. A rate cut while traffic flows must keep the old burst (BURST): tbf changes in place,
# and a packet queued under the larger bucket never fits the smaller one, so it blocks the link for good.
wan_shape() {
  local i=$1 mbit=$2 burst=${3:-}
  if [ -z "$burst" ]; then
    burst=$((mbit * 1000000 / 8 / 100))
    ((burst < 65536)) && burst=65536
  fi
  tc -n "$(wan_ns "$i")" qdisc replace dev "$(wan_peer_veth "$i")" root tbf rate "${mbit}mbit" burst "$burst" latency 100ms
  tc -n "$(wan_ns host)" qdisc replace dev "$(wan_host_veth "$i")" root tbf rate "${mbit}mbit" burst "$burst" latency 100ms
}

wan_link_down() { ip -n "$(wan_ns host)" link set "$(wan_host_veth "$1")" down; ip -n "$(wan_ns "$1")" link set "$(wan_peer_veth "$1")" down; }
wan_link_up() {
  ip -n "$(wan_ns host)" link set "$(wan_host_veth "$1")" up
  ip -n "$(wan_ns "$1")" link set "$(wan_peer_veth "$1")" up
  wan_wait_link_up "$1" || wan_die "peer $1's link did not come back"
}

# wan_wait_link_up PEER: until both ends of PEER's veth report operstate up (at most 10 s).
wan_wait_link_up() {
  local k h p
  for ((k = 0; k < 50; k++)); do
    h=$(wan_exec host cat "/sys/class/net/$(wan_host_veth "$1")/operstate")
    p=$(wan_exec "$1" cat "/sys/class/net/$(wan_peer_veth "$1")/operstate")
    [ "$h" = up ] && [ "$p" = up ] && return 0
    sleep 0.2
  done
  return 1
}

# wan_veth_bytes PEER: "RX TX" bytes of the host-side veth of PEER (RX: from the peer, TX: to it).
wan_veth_bytes() {
  local dev; dev=$(wan_host_veth "$1")
  wan_exec host cat "/sys/class/net/$dev/statistics/rx_bytes" "/sys/class/net/$dev/statistics/tx_bytes" | paste -sd' '
}

# wan_sampler_start FILE: every 0.5 s (for at most 2 hours), one line "EPOCH JSON" with the host
# namespace's link statistics (ip -s -j link) appended to FILE, until wan_sampler_stop.
wan_sampler_start() {
  local f=$1 hns; hns=$(wan_ns host)
  (for ((k = 0; k < 14400; k++)); do
     kill -0 $$ 2> /dev/null || break
     echo "$(date +%s.%N) $(ip -n "$hns" -s -j link show 2> /dev/null)" >> "$f"
     sleep 0.5
   done) &
  WAN_SAMPLER_PID=$!
  WAN_PIDS+=("$!")
}
wan_sampler_stop() { [ -n "${WAN_SAMPLER_PID:-}" ] && kill "$WAN_SAMPLER_PID" 2> /dev/null; wait "$WAN_SAMPLER_PID" 2> /dev/null || true; }

# wan_bursts FILE PEER MBIT: the transfers seen on PEER's link in a sampler FILE: per direction, each
# interval in which the link moved more than a quarter of MBIT, with its start (seconds since the first
# sample), duration, bytes and mean rate. "down" is host -> peer (host-side tx), "up" peer -> host.
wan_bursts() {
  /usr/bin/python3 - "$1" "$(wan_host_veth "$2")" "$3" <<'PY'
import json, sys
path, dev, mbit = sys.argv[1], sys.argv[2], float(sys.argv[3])
samples = []
for line in open(path):
    t, _, js = line.partition(" ")
    try:
        links = json.loads(js)
    except ValueError:
        continue
    for l in links:
        if l.get("ifname") == dev:
            st = l["stats64"]
            samples.append((float(t), st["rx"]["bytes"], st["tx"]["bytes"]))
if len(samples) < 2:
    sys.exit(0)
t0 = samples[0][0]
floor = mbit * 1e6 / 8 / 4
for name, col in (("down", 2), ("up", 1)):
    start = None
    for (ta, *a), (tb, *b) in zip(samples, samples[1:]):
        rate = (b[col - 1] - a[col - 1]) / max(tb - ta, 1e-3)
        if rate > floor and start is None:
            start, bytes0 = ta, a[col - 1]
        elif rate <= floor and start is not None:
            n = a[col - 1] - bytes0 + (b[col - 1] - a[col - 1])
            print("%-4s at %7.1f s: %6.1f s, %11d bytes, %6.1f Mbit/s" % (name, start - t0, tb - start, n, n * 8 / 1e6 / (tb - start)))
            start = None
    if start is not None:
        print("%-4s at %7.1f s: still moving at the last sample" % (name, start - t0))
PY
}

# wan_toml_set FILE SECTION KEY VALUE: set KEY = VALUE (VALUE as TOML: quote strings) in [SECTION],
# replacing the key if present, adding the section if missing.
wan_toml_set() {
  local f=$1 sec=$2 key=$3 val=$4
  awk -v sec="[$sec]" -v key="$key" -v val="$val" '
    function emit() { if (insec && !done) { print key " = " val; done = 1 } }
    /^\[/ { if (insec) emit(); insec = ($0 == sec); seen = seen || insec; print; next }
    insec && $0 ~ "^" key "[ \t]*=" { if (!done) print key " = " val; done = 1; next }
    { print }
    END { if (insec) emit(); if (!seen) { print ""; print sec; print key " = " val } }
  ' "$f" > "$f.tmp" && mv "$f.tmp" "$f"
}

# wan_run_toml [BASE]: the host's run.toml ($WAN_DIR/host/run.toml) from BASE (default the demo's), with
# the bind on every host address and the checkpoint folder relative to the host's folder.
wan_run_toml() {
  local base=${1:-$WAN_ROOT/data/demo-run.toml} f
  f=$(wan_node_dir host)/run.toml
  cp "$base" "$f"
  wan_toml_set "$f" run bind "\"tcp://0.0.0.0:$WAN_PORT\""
  wan_toml_set "$f" run checkpoint_dir '"run"'
  wan_toml_set "$f" run islands "$WAN_N"
  echo "$f"
}

# wan_invite_peers: each peer makes its key in its own folder; its public key goes to the host's
# folder, the host writes the invite (endpoint: its address on that peer's link), the invite goes back.
wan_invite_peers() {
  local i
  for ((i = 1; i <= WAN_N; i++)); do wan_invite_peer "$i"; done
}
# wan_invite_peer I: the same for one peer (also while the host runs: it applies the new allow-list).
wan_invite_peer() {
  local i=$1 hd pd
  hd=$(wan_node_dir host)
  pd=$(wan_node_dir "$i")
  (cd "$pd" && ARCH_DATA_DIR=$pd/data "$WAN_ARCH" keygen --out peer.key > /dev/null) || wan_die "keygen peer $i"
  cp "$pd/peer.key.pub" "$hd/peer-$i.key.pub"
  (cd "$hd" && ARCH_DATA_DIR=$hd/data "$WAN_ARCH" invite --config run.toml --peer-key "peer-$i.key.pub" \
    --name "peer-$i" --endpoint "tcp://$(wan_host_addr "$i"):${WAN_ENDPOINT_PORT:-$WAN_PORT}" --out "peer-$i.invite" > /dev/null) ||
    wan_die "invite peer $i"
  cp "$hd/peer-$i.invite" "$pd/peer.invite"
}

# wan_start_proxy DELAY_MS: tests/wan/proxy.py in the host namespace, on every host address at port
# WAN_PORT+1000, forwarding to the host's port on 127.0.0.1 with DELAY_MS one way in each direction
# (each peer's bytes still cross only its own veth). Call before wan_invite_peers: invites then carry
# the proxy's port. Control socket: 127.0.0.1:WAN_PORT+1001 in the host namespace.
wan_start_proxy() {
  WAN_ENDPOINT_PORT=$((WAN_PORT + 1000))
  wan_exec host /usr/bin/python3 "$WAN_ROOT/tests/wan/proxy.py" --listen "0.0.0.0:$WAN_ENDPOINT_PORT" \
    --target "127.0.0.1:$WAN_PORT" --delay-ms "$1" --control "127.0.0.1:$((WAN_PORT + 1001))" \
    2> "$WAN_DIR/proxy.log" &
  WAN_PIDS+=("$!")
  wan_wait_for "$WAN_DIR/proxy.log" "^proxy: .* -> " 10 "$!" || wan_die "the latency proxy did not start"
}

# wan_start_host ARGS...: archipelago host in the host namespace and folder; stdout (the round table)
# to host.out, stderr (the log) to host.log, its run events to host.events. Sets WAN_HOST_PID.
wan_start_host() {
  local hd; hd=$(wan_node_dir host)
  (cd "$hd" && ARCH_DATA_DIR=$hd/data OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} \
    exec ip netns exec "$(wan_ns host)" "$WAN_ARCH" host --config run.toml --events host.events "$@" \
    > "$hd/host.out" 2> "$hd/host.log") &
  WAN_HOST_PID=$!
  WAN_PIDS+=("$WAN_HOST_PID")
}

# wan_start_peer I ARGS...: archipelago peer I in its namespace and folder; log to peer.log, its run
# events to peer.events (a peer started again appends to both).
wan_start_peer() {
  local i=$1 pd; shift
  pd=$(wan_node_dir "$i")
  (cd "$pd" && ARCH_DATA_DIR=$pd/data OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} \
    exec ip netns exec "$(wan_ns "$i")" "$WAN_ARCH" peer --invite peer.invite --key peer.key --name "peer-$i" \
      --events peer.events "$@" > "$pd/peer.out" 2> "$pd/peer.log") &
  WAN_PEER_PID[$i]=$!
  WAN_PIDS+=("$!")
}

wan_host_log() { echo "$(wan_node_dir host)/host.log"; }
wan_peer_log() { echo "$(wan_node_dir "$1")/peer.log"; }
wan_host_events() { echo "$(wan_node_dir host)/host.events"; }
wan_peer_events() { echo "$(wan_node_dir "$1")/peer.events"; }

# wan_events FILE [FROM] KIND [FIELD=VALUE ...]: the run events of FILE (docs/events.md) of KIND whose
# fields equal the values given, one JSON object a line; FROM (a number: a line count) skips that many
# lines first. The tests wait on these, not on the log's wording.
wan_events() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
args = sys.argv[1:]
path, args = args[0], args[1:]
skip = int(args.pop(0)) if args and args[0].isdigit() else 0
kind, conds = args[0], [a.split("=", 1) for a in args[1:]]
try:
    lines = open(path, errors="replace").read().split("\n")[:-1]  # a torn last line waits
except FileNotFoundError:
    lines = []
for line in lines[skip:]:
    e = json.loads(line)
    if e.get("kind") == kind and all(str(e.get(k)) == v for k, v in conds):
        print(line)
PY
}
# wan_count FILE [FROM] KIND [FIELD=VALUE ...]: how many such events.
wan_count() { wan_events "$@" | wc -l; }
# wan_lines FILE: the lines of an events file so far (a FROM for the calls above).
wan_lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }
# wan_field FILE [FROM] KIND [FIELD=VALUE ...] -- NAME: field NAME of the first such event ("" if none).
wan_field() {
  local args=() name
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  name=$2
  wan_events "${args[@]}" | head -n 1 | wan_json "j.get('$name', '')"
}
# wan_wait_event FILE SECONDS PID [FROM] KIND [FIELD=VALUE ...]: until such an event is in FILE; fails
# after SECONDS, or when PID (the process that writes FILE) has ended without writing it.
wan_wait_event() {
  local f=$1 secs=$2 pid=$3 k; shift 3
  for ((k = 0; k < secs * 5; k++)); do
    [ -n "$(wan_events "$f" "$@")" ] && return 0
    if [ -n "$pid" ] && ! kill -0 "$pid" 2> /dev/null; then
      [ -n "$(wan_events "$f" "$@")" ] && return 0
      return 1
    fi
    sleep 0.2
  done
  return 1
}

# wan_wait_for FILE ERE SECONDS [PID]: until a line of FILE matches ERE; fails after SECONDS, or when PID
# (the process that writes FILE) has ended without writing it.
wan_wait_for() {
  local f=$1 re=$2 secs=$3 pid=${4:-} k
  for ((k = 0; k < secs * 5; k++)); do
    grep -Eq -- "$re" "$f" 2> /dev/null && return 0
    if [ -n "$pid" ] && ! kill -0 "$pid" 2> /dev/null; then
      grep -Eq -- "$re" "$f" 2> /dev/null && return 0
      return 1
    fi
    sleep 0.2
  done
  return 1
}

# wan_wait_pid PID SECONDS: waits for PID to exit; its exit status, or 124 after SECONDS (then TERM).
wan_wait_pid() {
  local pid=$1 secs=$2 k
  for ((k = 0; k < secs * 5; k++)); do
    if ! kill -0 "$pid" 2> /dev/null; then
      wait "$pid"; return $?
    fi
    sleep 0.2
  done
  kill -TERM "$pid" 2> /dev/null || true
  return 124
}

# wan_wait_peers SECONDS: waits (one deadline for all) for every peer to exit; those still running
# then get SIGTERM. Prints the peers that had to be stopped; returns 1 if there were any.
wan_wait_peers() {
  local secs=$1 k i left
  for ((k = 0; k < secs * 5; k++)); do
    left=""
    for ((i = 1; i <= WAN_N; i++)); do kill -0 "${WAN_PEER_PID[$i]}" 2> /dev/null && left+=" $i"; done
    [ -z "$left" ] && return 0
    sleep 0.2
  done
  for i in $left; do kill -TERM "${WAN_PEER_PID[$i]}" 2> /dev/null || true; done
  echo "peers still running ${secs} s after the host ended (stopped):$left"
  return 1
}

# wan_api NODE PORT TOKENFILE METHOD PATH: a control API call inside NODE's namespace (it listens on
# that namespace's 127.0.0.1); prints the body.
wan_api() {
  local node=$1 port=$2 tok=$3 method=$4 path=$5
  wan_exec "$node" curl -s -m 5 -X "$method" -H "Authorization: Bearer $(cat "$tok")" "http://127.0.0.1:$port$path"
}

# wan_round_times PEERLOG: one line "ROUND COMPUTE_S COMM_S SOURCE" per round the peer applied.
# SOURCE "peer": its own "round R times: compute X s, communication Y s" line. SOURCE "log": derived
# from timestamps: compute = the inner steps (from the first step line, extended back by the mean step
# time, to "sent pseudo-gradient"), communication = the rest of the round's wall time (the previous
# "applied"/"synced" line to this round's "applied": upload, waiting for the others, the update).
wan_round_times() {
  /usr/bin/python3 - "$1" <<'PY'
import re, sys
from datetime import datetime
ts = lambda l: datetime.strptime(l[:23], "%Y-%m-%d %H:%M:%S.%f").timestamp()
own, steps, sent, applied, mark = {}, {}, {}, {}, None
for line in open(sys.argv[1], errors="replace"):
    if not re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}", line):
        continue
    t = ts(line)
    if m := re.search(r"round (\d+) times: compute ([\d.]+) s, communication ([\d.]+) s", line):
        own[int(m[1])] = (float(m[2]), float(m[3]))
    elif m := re.search(r"round (\d+) step (\d+)/(\d+) ", line):
        steps.setdefault(int(m[1]), []).append((t, int(m[2])))
    elif m := re.search(r"round (\d+) sent pseudo-gradient", line):
        sent[int(m[1])] = t
    elif m := re.search(r"round (\d+) applied \(.*matches the host", line):
        applied[int(m[1])] = (t, mark)
        mark = t
    elif re.search(r"synced to round \d+", line):
        mark = t
for r in sorted(set(applied) | set(own)):
    if r in own:
        print(r, "%.2f" % own[r][0], "%.2f" % own[r][1], "peer")
        continue
    st = steps.get(r, [])
    if r not in sent or not st or r not in applied or applied[r][1] is None:
        continue
    (t0, s0), (t1, s1) = st[0], st[-1]
    per_step = (t1 - t0) / (s1 - s0) if s1 > s0 else 0.0
    compute = sent[r] - t0 + s0 * per_step
    wall = applied[r][0] - applied[r][1]
    print(r, "%.2f" % compute, "%.2f" % max(wall - compute, 0.0), "log")
PY
}

# wan_json_lines EXPR: wan_json for each JSON line on stdin (events), one result a line.
wan_json_lines() { /usr/bin/python3 -c "import json,sys
for line in sys.stdin:
    j = json.loads(line); print($1)"; }
# wan_json EXPR: evaluates a Python expression over the JSON on stdin (bound to j); prints the result.
wan_json() { /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); r=($1); print(r if not isinstance(r,(dict,list)) else json.dumps(r))"; }

# wan_host_theta: the host's θ hash after its last update (12 hex digits, its last round_finished).
wan_host_theta() { wan_events "$(wan_host_events)" round_finished | tail -n 1 | wan_json "j['theta']"; }
# wan_peer_theta PEER ROUND: the θ hash (12 hex digits) peer PEER held, matching the host's, after ROUND.
wan_peer_theta() { wan_events "$(wan_peer_events "$1")" round_applied "round=$2" | tail -n 1 | wan_json "j['theta']"; }
# wan_table_rows: the host's round table rows as "ROUND ISLANDS SECONDS H".
wan_table_rows() { awk '$1 ~ /^[0-9]+$/ && NF == 9 {print $1, $2, $8, $9}' "$(wan_node_dir host)/host.out"; }
# wan_event_time FILE [FROM] KIND [FIELD=VALUE ...]: epoch seconds of the first such event ("" if none).
wan_event_time() { wan_events "$@" | head -n 1 | wan_json "j['time']"; }

# wan_msg: log lines on stdin without the date and level ("13:49:52.063 round 0 started ...").
wan_msg() { sed -E 's/^[0-9-]+ ([0-9:.]+) [a-z]+ +\[[a-z]+\] /\1 /'; }

wan_dump_logs() {
  [ -n "$WAN_DIR" ] && [ -d "$WAN_DIR" ] || return 0
  local f
  for f in "$WAN_DIR"/host/host.out "$WAN_DIR"/host/host.log "$WAN_DIR"/peer-*/peer.log; do
    [ -f "$f" ] || continue
    echo "----- ${f#"$WAN_DIR"/} (last 25 lines) -----" >&2
    tail -n 25 "$f" >&2
  done
}
