#!/usr/bin/env bash
# bench/make_test_minutes.sh [REV] [TARGET]: the minutes `make TARGET` (default test) takes from a fresh
# clone of REV (default HEAD) on this machine, phase by phase, and the slowest tests of each ctest run.
# The clone goes to a temporary folder (removed at the end; build-test-data/ too, so nothing is reused).
# The full log, each line stamped with the seconds since the start, stays in bench/out/make_TARGET_REV.log.
set -euo pipefail
cd "$(dirname "$0")/.."
REV=$(git rev-parse --short "${1:-HEAD}")
TARGET=${2:-test}
OUTDIR=$PWD/bench/out
mkdir -p "$OUTDIR"
LOG=$OUTDIR/make_${TARGET}_$REV.log
WORK=$(mktemp -d /tmp/arch-fresh.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
git clone -q --no-local . "$WORK/src"
git -C "$WORK/src" checkout -q "$REV"
start=$(date +%s)
status=0
(cd "$WORK/src" && make "$TARGET" 2>&1) | while IFS= read -r line; do
  printf '%d %s\n' $(($(date +%s) - start)) "$line"
done > "$LOG" || status=$?
end=$(date +%s)
python3 bench/make_test_phases.py "$LOG" $((end - start))
exit "$status"
