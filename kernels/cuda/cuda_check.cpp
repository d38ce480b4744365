// kernels/cuda/cuda_check.cpp: the device probe for skipping GPU tests and DeviceBuffer.
#include "kernels/cuda/cuda_check.h"

namespace arch::cuda {

std::string no_device_reason() {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();  // clear the sticky error so later calls report their own
        return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
    }
    if (count == 0) return "no usable CUDA device (the driver sees none)";
    return "";
}

int device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky error of a missing driver
        return 0;
    }
    return n;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    check(cudaMalloc(&ptr_, bytes), ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
    check(cudaMemset(ptr_, 0, bytes), "cudaMemset");
    // cudaMemset runs on the legacy default stream, which does not order non-blocking streams: wait,
    // so work the caller enqueues on its own stream never races the fill.
    check(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize");
}

DeviceBuffer::~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        if (ptr_ != nullptr) cudaFree(ptr_);
        ptr_ = o.ptr_;
        bytes_ = o.bytes_;
        o.ptr_ = nullptr;
        o.bytes_ = 0;
    }
    return *this;
}

}  // namespace arch::cuda
