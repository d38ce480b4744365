#!/usr/bin/env bash
# scripts/run_fuzzers.sh DIR: runs every libFuzzer target (DIR/fuzz_*) for FUZZ_SECONDS each (default
# 15), except those in the table below (fuzz_host: 60, a whole run per input); FUZZ_SECONDS_NAME
# overrides one target. FUZZ_JOBS targets run at once (default: one a core; each is one process of one
# thread), the longest first. Thirteen targets, about 2 minutes on 2 cores. Each starts from its committed
# seed corpus in tests/fuzz/corpus/NAME when there is one. A crashing input is kept in DIR/../fuzz-artifacts/.
set -uo pipefail
dir=${1:?usage: run_fuzzers.sh DIR}
secs=${FUZZ_SECONDS:-15}
jobs=${FUZZ_JOBS:-$(nproc)}
export OMP_NUM_THREADS=1
declare -A target_secs=([fuzz_host]=60)
shopt -s nullglob
targets=("$dir"/fuzz_*)
if ((${#targets[@]} == 0)); then echo "run_fuzzers: no fuzz targets in $dir"; exit 0; fi
artifacts="$dir/../fuzz-artifacts"
mkdir -p "$artifacts"

seconds_for() {
  local name override
  name=$(basename "$1")
  override=FUZZ_SECONDS_$name
  echo "${!override:-${target_secs[$name]:-$secs}}"
}

# One target, its report printed at its end in one piece (targets run side by side).
run_one() {
  local t=$1 name t_secs work seeds status=0
  name=$(basename "$t")
  t_secs=$(seconds_for "$t")
  work=$(mktemp -d)
  seeds=tests/fuzz/corpus/$name
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/
  "$t" -max_total_time="$t_secs" -rss_limit_mb=4096 -print_final_stats=1 \
       -artifact_prefix="$artifacts/$name-" "$work" > "$work.log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    { echo "run_fuzzers: $name for ${t_secs}s"; tail -n 40 "$work.log"
      echo "run_fuzzers: $name FAILED (exit $status); crashing input in $artifacts"; }
  else
    { echo "run_fuzzers: $name for ${t_secs}s"; tail -n 4 "$work.log"; }
  fi
  rm -rf "$work" "$work.log"
  return "$status"
}

# The longest first, so that it runs beside the others rather than after them.
mapfile -t ordered < <(for t in "${targets[@]}"; do echo "$(seconds_for "$t") $t"; done | sort -rn | cut -d' ' -f2-)
failed=0 running=0
for t in "${ordered[@]}"; do
  if ((running >= jobs)); then
    wait -n || failed=$((failed + 1))
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=$((failed + 1))
  running=$((running - 1))
done
if ((failed > 0)); then
  echo "run_fuzzers: $failed of ${#targets[@]} FAILED"
  exit 1
fi
echo "run_fuzzers: ${#targets[@]} passed, 0 failed"
