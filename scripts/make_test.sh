#!/usr/bin/env bash
# scripts/make_test.sh [JOBS]: the tests of `make test`, once build/ is built and build-asan/ and
# build-fuzz/ are configured (Makefile). Each test runs once (docs/build.md): build/'s tests (the
# programs, the GPU and emulated GPU, the app, the benches, the package, the test network), then the
# in-process tests under the sanitizers, then the fuzzers. The sanitizer and fuzz trees compile in the
# background while build/'s tests run, at idle CPU priority (SCHED_IDLE: only the CPU those tests leave
# unused; many wait on links, sockets and other processes). Exits non-zero if any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${1:-$(nproc)}
log=build-asan/background-build.log
echo "== make_test: building build-asan/ and build-fuzz/ in the background (idle priority; $log)"
(chrt --idle 0 cmake --build build-asan -j "$JOBS" &&
  chrt --idle 0 cmake --build build-fuzz -j "$JOBS" --target fuzzers) > "$log" 2>&1 &
background=$!
status=0
echo "== make_test: the tests in build/"
(cd build && ctest --output-on-failure -j 1) || status=1
echo "== make_test: waiting for build-asan/ and build-fuzz/ ($(grep -c 'Building' "$log") files compiled so far)"
if ! wait "$background"; then
  tail -n 60 "$log"
  echo "make_test: the sanitizer or the fuzz tree failed to build"
  exit 1
fi
echo "== make_test: the tests in build-asan/ (AddressSanitizer + UndefinedBehaviorSanitizer)"
(cd build-asan && ARCH_SANITIZED=1 ctest --output-on-failure -j 1 -LE no_asan) || status=1
echo "== make_test: the fuzzers"
bash scripts/run_fuzzers.sh build-fuzz/bin || status=1
exit "$status"
