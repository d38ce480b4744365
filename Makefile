# Makefile: the two commands of the README, plus build. Every target first runs the idempotent
# install step, then configures and builds with CMake into build/ (binaries in build/bin/); the demo
# builds its one program into build-demo/.
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps build demo demo-wan test test-asan fuzz deb clean

deps:
	@bash scripts/install_deps.sh

# The trees' configurations (docs/build.md): which tests each builds is ARCH_TEST_SET.
CONFIGURE_BUILD = cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DARCH_WERROR=ON $(CMAKE_FLAGS)
CONFIGURE_ASAN = cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DARCH_SANITIZE=ON -DARCH_WERROR=ON -DARCH_BENCH=OFF \
  -DARCH_CUDA=OFF -DARCH_GUI=OFF -DARCH_TEST_SET=sanitized $(CMAKE_FLAGS)
CONFIGURE_FUZZ = CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DARCH_FUZZ=ON \
  -DARCH_BENCH=OFF -DARCH_TESTS=OFF -DARCH_CUDA=OFF -DARCH_GUI=OFF $(CMAKE_FLAGS)

build: deps
	$(CONFIGURE_BUILD) -DARCH_TEST_SET=all
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

# Every test once (docs/build.md): build/ holds the programs and the tests that start them or need the
# machine (GPU, emulated GPU, app, benches, package, test network); build-asan/ every in-process test
# under AddressSanitizer + UndefinedBehaviorSanitizer; build-fuzz/ the libFuzzer targets. The last two
# compile while build/'s tests run (scripts/make_test.sh).
test: deps
	$(CONFIGURE_BUILD) -DARCH_TEST_SET=release
	cmake --build build -j $(JOBS)
	$(CONFIGURE_ASAN)
	$(CONFIGURE_FUZZ)
	bash scripts/make_test.sh $(JOBS)

# The sanitizer tree alone: CPU code only (the CUDA backend is left out, nvcc takes no sanitizer flags;
# the desktop app too: it reads nothing from peers, and its tests run in build/).
test-asan: deps
	$(CONFIGURE_ASAN)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ARCH_SANITIZED=1 ctest --output-on-failure -j 1 -LE no_asan

# libFuzzer targets for every decoder, built with clang, each run for a bounded time.
fuzz: deps
	$(CONFIGURE_FUZZ)
	cmake --build build-fuzz -j $(JOBS) --target fuzzers
	bash scripts/run_fuzzers.sh build-fuzz/bin

# The .deb packages (CPU-only build; docs/install.md): build-deb/archipelago_VERSION_amd64.deb.
deb: deps
	bash scripts/make_deb.sh build-deb ON

clean:
	rm -rf build build-demo build-asan build-fuzz build-deb build-test-data
