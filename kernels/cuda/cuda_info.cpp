// kernels/cuda/cuda_info.cpp: the device probe behind `archipelago info` and the MFU of bench_gpu_train.
#include "kernels/cuda/cuda_info.h"

#include <cuda_runtime_api.h>

#include <utility>

namespace arch::cuda {

namespace {

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace

double bf16_peak_tflops(const std::string& name, int sm, int multiprocessors, double clock_ghz, std::string* source) {
    // Dense bf16 with fp32 accumulation, from NVIDIA's datasheets (no sparsity).
    static const std::pair<const char*, double> known[] = {
        {"H200", 989.4},     {"H100 SXM", 989.4}, {"H100 80GB HBM3", 989.4}, {"H100 NVL", 835.0},
        {"H100 PCIe", 756.0}, {"H100", 756.0},     {"GH200", 989.4},          {"A100", 312.0},
        {"A800", 312.0},     {"L40S", 362.1},     {"L40", 181.0},            {"L4", 121.0},
        {"A10G", 70.0},      {"A10", 125.0},      {"RTX 6000 Ada", 364.2},   {"RTX A6000", 154.8},
        {"RTX 4090", 165.2}, {"RTX 4080", 97.5},  {"RTX 3090", 71.0},        {"RTX 3080", 59.5},
    };
    for (const auto& [key, tflops] : known)
        if (name.find(key) != std::string::npos) {
            if (source) *source = "datasheet";
            return tflops;
        }
    // Tensor-core bf16 FLOPs per clock per SM: Ampere A100 2048, Hopper 4096, consumer Ampere/Ada
    // (fp32 accumulation) 512; others taken as 1024.
    double per_sm = 1024;
    if (sm == 80) per_sm = 2048;
    else if (sm >= 90 && sm < 100) per_sm = 4096;
    else if (sm == 86 || sm == 89) per_sm = 512;
    if (source) *source = "estimate (SMs x clock x per-SM rate)";
    return multiprocessors * clock_ghz * per_sm / 1e3;
}

Info cuda_info() {
    Info info;
#ifdef ARCH_CUDA_ARCHITECTURES
    info.compiled_architectures = ARCH_CUDA_ARCHITECTURES;
#endif
    int runtime = 0, driver = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) info.runtime_version = version_string(runtime);
    if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) info.driver_version = version_string(driver);
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        info.problem = cudaGetErrorString(e);
        return info;
    }
    if (count == 0) info.problem = "the driver sees no device";
    for (int d = 0; d < count; ++d) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
        DeviceInfo di;
        di.index = d;
        di.name = prop.name;
        di.sm = prop.major * 10 + prop.minor;
        di.memory_bytes = prop.totalGlobalMem;
        di.multiprocessors = prop.multiProcessorCount;
        int khz = 0;
        if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d) == cudaSuccess) di.clock_ghz = khz / 1e6;
        di.bf16_peak_tflops = bf16_peak_tflops(di.name, di.sm, di.multiprocessors, di.clock_ghz, &di.peak_source);
        info.devices.push_back(std::move(di));
    }
    return info;
}

}  // namespace arch::cuda
