#!/usr/bin/env bash
# scripts/run_fuzzers.sh DIR: runs every libFuzzer target (DIR/fuzz_*) for FUZZ_SECONDS each (default 30),
# starting from its committed seed corpus in tests/fuzz/corpus/NAME when there is one.
set -euo pipefail
dir=${1:?usage: run_fuzzers.sh DIR}
secs=${FUZZ_SECONDS:-30}
shopt -s nullglob
targets=("$dir"/fuzz_*)
if ((${#targets[@]} == 0)); then echo "run_fuzzers: no fuzz targets in $dir"; exit 0; fi
for t in "${targets[@]}"; do
  name=$(basename "$t")
  work=$(mktemp -d)
  seeds=tests/fuzz/corpus/$name
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/
  echo "run_fuzzers: $name for ${secs}s"
  "$t" -max_total_time="$secs" -rss_limit_mb=4096 -print_final_stats=1 "$work" 2>&1 | tail -n 4
  status=${PIPESTATUS[0]}
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then echo "run_fuzzers: $name FAILED"; exit 1; fi
done
echo "run_fuzzers: ${#targets[@]} passed, 0 failed"
