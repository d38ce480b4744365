// kernels/cuda/cuda_info.h: what the CUDA backend can see: runtime and driver versions, the compiled
// architectures, each visible device, and its dense bf16 tensor-core peak (for MFU figures).
// Plain C++ header. Never throws: a machine without a driver gets an explanation in `problem`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace arch::cuda {

struct DeviceInfo {
    int index = 0;
    std::string name;
    int sm = 0;  // compute capability major*10 + minor
    std::size_t memory_bytes = 0;
    int multiprocessors = 0;
    double clock_ghz = 0;
    double bf16_peak_tflops = 0;  // dense, fp32 accumulation
    std::string peak_source;      // "datasheet" or "estimate (SMs x clock x per-SM rate)"
};

struct Info {
    std::string runtime_version;           // "13.0"
    std::string driver_version;            // "" without a driver
    std::string compiled_architectures;    // "80,86,89,90" (or "native")
    std::vector<DeviceInfo> devices;
    std::string problem;                   // why no device is usable, if none is
};

Info cuda_info();

// Dense bf16 peak of one device in TFLOP/s: NVIDIA's datasheet figure for the data-centre and
// desktop parts we know by name, else SMs x boost clock x the architecture's per-SM rate.
double bf16_peak_tflops(const std::string& name, int sm, int multiprocessors, double clock_ghz, std::string* source);

}  // namespace arch::cuda
