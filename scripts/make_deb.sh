#!/usr/bin/env bash
# scripts/make_deb.sh [BUILD_DIR] [GUI=ON|OFF]: builds the .deb packages (archipelago, and
# archipelago-gui when GUI=ON and Qt 6 is there) with CPack; the packages' dependencies are Debian's
# runtime packages (dpkg-shlibdeps), and the program they ship links none of CUDA's libraries, which
# are not Debian packages. A new BUILD_DIR is configured CPU-only Release; one already configured
# (test_deb packs make test's build/) is packed as it is, with archipelago-cpu, the program without the
# CUDA backend, installed as archipelago (packaging/CMakeLists.txt). A package goes to other machines: a
# new BUILD_DIR is built for the baseline x86-64 (ARCH_CPU_LEVEL, docs/build.md). Prints the .deb paths,
# one a line, last.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-deb}
GUI=${2:-ON}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DARCH_CUDA=OFF -DARCH_TESTS=OFF -DARCH_BENCH=OFF \
    -DARCH_GUI="$GUI" -DARCH_WERROR=ON -DARCH_CPU_LEVEL=baseline > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
fi
cmake --build "$BUILD" -j "$(nproc)"
rm -f "$BUILD"/*.deb
(cd "$BUILD" && cpack -G DEB > cpack.log 2>&1) || { cat "$BUILD/cpack.log"; exit 1; }
ls "$BUILD"/*.deb
