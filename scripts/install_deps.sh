#!/usr/bin/env bash
# scripts/install_deps.sh [demo]: installs every Debian package (and the Python venv for test tooling)
# that Archipelago needs, and nothing more. Idempotent: a second run installs nothing and is quick.
# Called first by every Makefile target, so a fresh Debian 12 machine needs only `make demo`/`make test`.
# `demo` installs only what building the CPU program needs (make demo): no tests' tools, no venv.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the program `archipelago` builds from (make demo builds nothing else).
BUILD_PACKAGES=(
  build-essential cmake pkg-config libomp-dev
  libdnnl-dev            # CPU GEMM (oneDNN sgemm)
  libzstd-dev zstd       # zstd codec stage and the bundled corpus
  zlib1g-dev             # gzip corpora for `archipelago prepare`
  libsodium-dev          # BLAKE2b hashes, keys
  libxxhash-dev          # XXH3 checksums of transfer chunks
  libpcre2-dev           # the split regexes of Hugging Face tokenizer.json files
  libzmq3-dev cppzmq-dev # transport
  libminiupnpc-dev libnatpmp-dev  # a home host's port mapping (UPnP IGD, NAT-PMP)
  libtomlplusplus-dev    # run.toml, invites, key files (TOML 1.0)
  nlohmann-json3-dev     # JSON: control API, HF config.json, JSON-lines logs, bench rows
  libcli11-dev           # command lines of archipelago and every bench
  libspdlog-dev libfmt-dev # logging
  libboost-dev           # control API: Boost.Beast/Asio HTTP (header-only)
)
# The rest of the house: tests, fuzzers, benchmarks, the desktop app, the packages.
OTHER_PACKAGES=(
  ninja-build clang clang-format
  catch2                 # unit tests (v2)
  debootstrap            # tests/install: the .deb in a clean Debian 12 chroot
  miniupnpd-nftables nftables  # tests/wan/test_wan_nat.sh: a home router in a namespace
  iproute2 curl          # tests/wan, bench/wan, make demo-wan: network namespaces, tc, the control API
  libboost-context-dev   # tests/cuda/emulator: its fibers switch without a syscall
  prometheus             # promtool, checks the control API's /metrics in tests
  bible-kjv              # source of the bundled corpus (data/README.md)
  sword-comm-tdavid sword-comm-mhcc sword-comm-scofield sword-text-web jargon-text libsword-utils  # the benchmark corpus (data/README.md)
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev  # archipelago-gui (Qt Charts needs Qt6OpenGL's CMake files)
  xvfb xauth imagemagick # scripts/gui_screenshot.sh (the app under a virtual X server)
  python3 python3-venv python3-numpy python3-torch  # reference fixtures and the transformers check
  python3-scipy python3-absl python3-attr python3-mpmath  # dp-accounting's dependencies (the DP accountant's fixture)
)
PACKAGES=("${BUILD_PACKAGES[@]}")
[ "${1:-}" = demo ] || PACKAGES+=("${OTHER_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python tooling for tests: Debian's torch plus Hugging Face transformers in a venv that sees it.
[ "${1:-}" = demo ] && exit 0
VENV=.venv
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
if ! "$VENV/bin/python" -c "import transformers, safetensors" 2>/dev/null; then
  echo "install_deps: installing transformers into $VENV"
  "$VENV/bin/pip" install -q "transformers==4.40.2"
fi
# Google's DP accountant: tests/fixtures/make_dp_epsilon_grid.py makes the accountant's fixture with it.
# Without its pinned dependencies: pip's newer numpy would shadow Debian's, which Debian's torch needs.
if ! "$VENV/bin/python" -c "import dp_accounting" 2>/dev/null; then
  echo "install_deps: installing dp-accounting into $VENV"
  "$VENV/bin/pip" install -q --no-deps "dp-accounting==0.6.0"
fi
