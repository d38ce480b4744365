# Makefile: the two commands of the README, plus build. Every target first runs the idempotent
# install step, then configures and builds with CMake into build/ (binaries in build/bin/); the demo
# builds its one program into build-demo/.
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps build demo demo-wan test test-asan fuzz deb clean

deps:
	@bash scripts/install_deps.sh

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DARCH_WERROR=ON $(CMAKE_FLAGS)
	cmake --build build -j $(JOBS)

# The demo runs one program on the CPU: build-demo/ holds just that program, built without CUDA,
# tests or the app (docs/build.md); `make build` still builds everything into build/.
demo:
	@bash scripts/install_deps.sh demo
	cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DARCH_CUDA=OFF -DARCH_GUI=OFF -DARCH_TESTS=OFF -DARCH_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build build-demo -j $(JOBS) --target archipelago
	ARCH_BIN=./build-demo/bin bash scripts/demo.sh

# The same demo across 4 network namespaces, each peer's link at 20 Mbit/s (needs root; tests/wan/netns.sh).
demo-wan: build
	bash scripts/demo_wan.sh

test: build
	cd build && ctest --output-on-failure -j 1
	$(MAKE) test-asan
	$(MAKE) fuzz

# The same tests once more under AddressSanitizer + UndefinedBehaviorSanitizer (CPU code: the CUDA
# backend is left out, its GPU tests would skip anyway and nvcc takes no sanitizer flags; the desktop app
# too: it reads nothing from peers, and its tests ran in the Release build).
test-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DARCH_SANITIZE=ON -DARCH_WERROR=ON -DARCH_BENCH=OFF -DARCH_CUDA=OFF -DARCH_GUI=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ARCH_SANITIZED=1 ctest --output-on-failure -j 1 -LE no_asan

# libFuzzer targets for every decoder, built with clang, each run for a bounded time.
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DARCH_FUZZ=ON -DARCH_BENCH=OFF -DARCH_TESTS=OFF -DARCH_CUDA=OFF -DARCH_GUI=OFF $(CMAKE_FLAGS)
	cmake --build build-fuzz -j $(JOBS) --target fuzzers
	bash scripts/run_fuzzers.sh build-fuzz/bin

# The .deb packages (CPU-only build; docs/install.md): build-deb/archipelago_VERSION_amd64.deb.
deb: deps
	bash scripts/make_deb.sh build-deb ON

clean:
	rm -rf build build-demo build-asan build-fuzz build-deb build-test-data
