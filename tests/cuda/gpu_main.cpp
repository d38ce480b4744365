// tests/cuda/gpu_main.cpp: main() of the GPU tests: without a usable CUDA device it prints
// "SKIPPED: <reason>" and exits 77, which ctest reports as skipped (never as passed).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "kernels/cuda/cuda_check.h"

int main(int argc, char** argv) {
    const std::string reason = arch::cuda::no_device_reason();
    if (!reason.empty()) {
        std::printf("SKIPPED: %s\n", reason.c_str());
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
