// kernels/cuda/cuda_check.h: CUDA, cuBLAS(Lt) status codes turned into arch::Error with the call named,
// the skip rule of GPU tests, and a device buffer owner. Plain C++ (no nvcc needed to include it).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "core/error.h"

namespace arch::cuda {

inline void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + " failed: " + cudaGetErrorString(e));
}

inline void check(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS)
        throw Error(std::string("cuBLAS: ") + what + " failed with status " + std::to_string(static_cast<int>(s)));
}

// After a kernel launch: reports a bad launch configuration at once (not at the next sync).
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

// Empty when a usable CUDA device exists, else why not (no driver, no device, ...): GPU tests print
// "SKIPPED: <reason>" and exit 77 with it.
std::string no_device_reason();
// Number of usable CUDA devices; 0 without a driver or a device (never throws).
int device_count();

// Owns device memory (cudaMalloc'ed, zero-filled); move-only.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr, o.bytes_ = 0; }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    template <class T>
    T* as() const { return static_cast<T*>(ptr_); }
    void* get() const { return ptr_; }
    std::size_t bytes() const { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

}  // namespace arch::cuda
