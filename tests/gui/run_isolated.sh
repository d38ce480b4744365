#!/usr/bin/env bash
# tests/gui/run_isolated.sh: runs a gui test program under Xvfb in a network namespace of its own that
# has only loopback, so a test of the app's defaults (a host on every address, port 5555, asking the
# router for a mapping) can bind and broadcast without touching this machine's network or its ports.
# Exits 77 (ctest: skipped, with the reason) where that cannot be made.
# usage: run_isolated.sh PROGRAM [ARGS...]
set -euo pipefail
if [ "$(id -u)" != 0 ]; then echo "skipped: a network namespace of its own needs root"; exit 77; fi
for tool in unshare xvfb-run ip; do
  command -v "$tool" > /dev/null || { echo "skipped: no $tool (scripts/install_deps.sh installs it)"; exit 77; }
done
exec unshare --net -- bash -c 'ip link set lo up && exec xvfb-run -a -s "-screen 0 1280x1024x24 -nolisten tcp" "$@"' run_isolated "$@"
