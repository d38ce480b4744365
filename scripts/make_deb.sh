#!/usr/bin/env bash
# scripts/make_deb.sh [BUILD_DIR] [GUI=ON|OFF]: builds the .deb packages (archipelago, and
# archipelago-gui when GUI=ON and Qt 6 is there) with CPack from a CPU-only Release build, since the
# CUDA toolkit's libraries are not Debian packages; the packages' dependencies are Debian's runtime
# packages (dpkg-shlibdeps). Prints the paths of the .deb files it made, one per line, last.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-deb}
GUI=${2:-ON}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DARCH_CUDA=OFF -DARCH_TESTS=OFF -DARCH_BENCH=OFF \
  -DARCH_GUI="$GUI" -DARCH_WERROR=ON > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)"
rm -f "$BUILD"/*.deb
(cd "$BUILD" && cpack -G DEB > cpack.log 2>&1) || { cat "$BUILD/cpack.log"; exit 1; }
ls "$BUILD"/*.deb
