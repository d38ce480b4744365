#!/usr/bin/env bash
# scripts/run_fuzzers.sh DIR: runs every libFuzzer target (DIR/fuzz_*) for FUZZ_SECONDS each (default
# 15), except those in the table below (fuzz_host: 60, a whole run per input); FUZZ_SECONDS_NAME
# overrides one target. Thirteen targets, about 4 minutes in CI. Each starts from its committed seed
# corpus in tests/fuzz/corpus/NAME when there is one. A crashing input is kept in DIR/../fuzz-artifacts/.
set -euo pipefail
dir=${1:?usage: run_fuzzers.sh DIR}
secs=${FUZZ_SECONDS:-15}
declare -A target_secs=([fuzz_host]=60)
shopt -s nullglob
targets=("$dir"/fuzz_*)
if ((${#targets[@]} == 0)); then echo "run_fuzzers: no fuzz targets in $dir"; exit 0; fi
artifacts="$dir/../fuzz-artifacts"
mkdir -p "$artifacts"
for t in "${targets[@]}"; do
  name=$(basename "$t")
  override=FUZZ_SECONDS_$name
  t_secs=${!override:-${target_secs[$name]:-$secs}}
  work=$(mktemp -d)
  seeds=tests/fuzz/corpus/$name
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/
  echo "run_fuzzers: $name for ${t_secs}s"
  status=0
  "$t" -max_total_time="$t_secs" -rss_limit_mb=4096 -print_final_stats=1 \
       -artifact_prefix="$artifacts/$name-" "$work" > "$work.log" 2>&1 || status=$?
  tail -n 4 "$work.log"
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$work.log"
    rm -rf "$work" "$work.log"
    echo "run_fuzzers: $name FAILED (exit $status); crashing input in $artifacts"
    exit 1
  fi
  rm -rf "$work" "$work.log"
done
echo "run_fuzzers: ${#targets[@]} passed, 0 failed"
