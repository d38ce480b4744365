#!/usr/bin/env bash
# bench/wan/run.sh: what the link costs an island, measured over the test network of tests/wan/netns.sh
# (a host and 3 peers, each in its own namespace and folder). For each pseudo-gradient codec and each
# peer link rate (tc tbf, both directions; a latency proxy adds WAN_LATENCY_MS one way) it runs the
# demo's DiLoCo run for a few rounds and prints one row: seconds of compute and of communication per
# round (the peers' "round R times: ..." lines, else their log timestamps), island utilisation
# (compute / wall time), and the bytes one peer's link carried per round (kernel counters of its veth,
# from its first sync to the end), and how busy each island was (its own "island busy" line: seconds in
# inner steps over the seconds since its first one began). Needs root. Not a ctest test; all islands
# share this machine's cores.
#
#   sudo bash bench/wan/run.sh                       # fp32, int8, fp4+ef at 20 and 100 Mbit/s
#   WAN_CODECS="int8:block=256+zstd:1" WAN_MBITS="20" WAN_BENCH_ROUNDS=5 bash bench/wan/run.sh
#   sudo bash bench/wan/run.sh overlap               # the same run in sync and overlap mode (issue 29)
#
# overlap: run.mode = "sync", "overlap" and "overlap" with H from the link (overlap-auto: inner.
# steps_per_round = "auto", bounds 2 to 300), on links slow enough that a sync's transfers take about
# a round's compute (WAN_MBITS, default 10 Mbit/s for the demo's model and int8 both ways), without
# DES-LOC (overlap mode refuses it; the sync run leaves it out too, so both move the same bytes).
# busy%: to the last update, which counts the last round's sync that nothing can hide; steady%: from the
# update halfway through to the one before the last (the first rounds of H from the link measure the
# link with the least H, and the last round's sync is not hidden).
set -euo pipefail
cd "$(dirname "$0")/../.."

MODES="sync"
if [ "${1:-}" = overlap ]; then
  MODES=${WAN_MODES:-"sync overlap overlap-auto"}
  CODECS=${WAN_CODECS:-"int8:block=256+zstd:1"}
  MBITS=${WAN_MBITS:-"10"}
else
  CODECS=${WAN_CODECS:-"fp32 int8:block=256+zstd:1 fp4+ef+zstd"}
  MBITS=${WAN_MBITS:-"20 100"}
fi
ROUNDS=${WAN_BENCH_ROUNDS:-3}
LATENCY_MS=${WAN_LATENCY_MS:-25}

# One run: prints "ROW mode codec mbit compute_s comm_s utilisation bytes_per_round up_per_round
# down_per_round source busy steady H" (source: "peer" when the peers logged their own round times, else
# "log": from timestamps; busy: the mean of the peers' last "island busy" share, in %; steady: the same
# at the update before the last; H: the rounds' H, min-max).
one_run() {
  local codec=$1 mbit=$2 mode=${3:-sync} i
  source tests/wan/netns.sh
  wan_setup 3 > /dev/null
  local cfg; cfg=$(wan_run_toml)
  wan_toml_set "$cfg" run rounds "$ROUNDS"
  wan_toml_set "$cfg" wire codec "\"$codec\""
  if [ "$mode" != sync ] || [ "$MODES" != sync ]; then
    wan_toml_set "$cfg" run mode "\"${mode%-auto}\""
    wan_toml_set "$cfg" outer sync_moments_every 0
  fi
  if [ "$mode" = overlap-auto ]; then
    wan_toml_set "$cfg" inner steps_per_round '"auto"'
    wan_toml_set "$cfg" inner auto_min_steps 2
    wan_toml_set "$cfg" inner auto_max_steps 300
  fi
  for i in 1 2 3; do wan_shape "$i" "$mbit"; done
  if [ "$LATENCY_MS" != 0 ]; then wan_start_proxy "$LATENCY_MS"; fi
  wan_invite_peers 2> /dev/null
  wan_start_host
  for i in 1 2 3; do wan_start_peer "$i"; done
  wan_wait_event "$(wan_peer_events 1)" 300 "${WAN_PEER_PID[1]}" synced round=0 || wan_die "peer 1 never synced"
  local rx0 tx0 rx1 tx1
  read -r rx0 tx0 < <(wan_veth_bytes 1)
  wan_wait_pid "$WAN_HOST_PID" 900 || wan_die "the host did not finish ($codec at $mbit Mbit/s)"
  wan_wait_peers 30 >&2 || true
  read -r rx1 tx1 < <(wan_veth_bytes 1)
  [ "$(wan_count "$(wan_host_events)" finished round="$ROUNDS")" = 1 ] || wan_die "the run did not finish ($codec at $mbit Mbit/s)"
  local busy steady hs
  busy=$(for i in 1 2 3; do grep -o 'island busy [0-9.]*%' "$(wan_peer_log "$i")" | tail -n 1 | tr -dc '0-9.\n'; done |
    awk '{ b += $1; n++ } END { if (n) printf "%.1f", b / n; else print "-" }')
  steady=$(for i in 1 2 3; do grep -o '([0-9.]* s of inner steps in [0-9.]* s)' "$(wan_peer_log "$i")" |
    sed -E 's/\(([0-9.]+) s of inner steps in ([0-9.]+) s\)/\1 \2/' |
    awk -v half=$((ROUNDS / 2)) -v last=$((ROUNDS - 2)) '{ busy[NR] = $1; wall[NR] = $2 }
      END { if (NR > last && wall[last] > wall[half]) printf "%.1f\n", 100 * (busy[last] - busy[half]) / (wall[last] - wall[half]) }'; done |
    awk '{ b += $1; n++ } END { if (n) printf "%.1f", b / n; else print "-" }')
  hs=$(wan_events "$(wan_host_events)" round_started | wan_json_lines "j['steps']" | sort -n | sed -n '1p;$p' | paste -sd-)
  for i in 1 2 3; do wan_round_times "$(wan_peer_log "$i")"; done | awk -v codec="$codec" -v mbit="$mbit" -v mode="$mode" \
    -v rounds="$ROUNDS" -v up=$((rx1 - rx0)) -v down=$((tx1 - tx0)) -v busy="$busy" -v steady="$steady" -v hs="$hs" '
      { c += $2; m += $3; n++; src[$4]++ }
      END {
        s = src["log"] ? (src["peer"] ? "mixed" : "log") : "peer"
        if (n == 0) { printf "ROW %s %s %s - - - %d %d %d - %s %s %s\n", mode, codec, mbit, (up + down) / rounds, up / rounds, down / rounds, busy, steady, hs; exit }
        printf "ROW %s %s %s %.2f %.2f %.2f %d %d %d %s %s %s %s\n", mode, codec, mbit, c / n, m / n, c / (c + m), (up + down) / rounds, up / rounds, down / rounds, s, busy, steady, hs
      }'
}

if [ "${1:-}" = --one ]; then
  MODES=$5
  one_run "$2" "$3" "$4"
  exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "bench/wan: needs root (ip netns, tc)"; exit 77; }
rows=()
for codec in $CODECS; do
  for mbit in $MBITS; do
    for mode in $MODES; do
      echo "bench/wan: $mode, $codec at $mbit Mbit/s ($ROUNDS rounds, ${LATENCY_MS} ms one way)..." >&2
      set +e
      out=$(bash "$0" --one "$codec" "$mbit" "$mode" "$MODES")
      rc=$?
      set -e
      if [ "$rc" = 77 ]; then echo "$out"; exit 77; fi
      row=$(echo "$out" | grep '^ROW ' || true)
      [ "$rc" = 0 ] && [ -n "$row" ] || row="ROW $mode $codec $mbit failed(exit-$rc) - - - - - - - - -"
      rows+=("$row")
    done
  done
done
echo
printf '%-12s %-22s %6s %10s %10s %7s %7s %8s %8s %16s %14s %14s %6s\n' mode codec Mbit/s compute_s comm_s util busy% steady% H \
  bytes/round/link up/round down/round times
for r in "${rows[@]}"; do
  set -- $r
  printf '%-12s %-22s %6s %10s %10s %7s %7s %8s %8s %16s %14s %14s %6s\n' "$2" "$3" "$4" "$5" "$6" "$7" "${12}" "${13}" "${14}" \
    "$8" "$9" "${10}" "${11}"
done
echo "(per round, means over the 3 peers; bytes: peer-1's veth, from its first sync to the end; ${LATENCY_MS} ms one way;"
echo " times: 'peer' from the peers' 'round R times' lines, 'log' from their log timestamps; util: compute over compute"
echo " and communication, which overlap mode hides, so for it read busy%: seconds in inner steps, overlapped ones too,"
echo " over the seconds since the first step began)"
