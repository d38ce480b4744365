// kernels/cuda/host_device.h: what the headers shared by kernels and CPU tests (bf16_math.h,
// codec_math.h) need to compile for both: ARCH_HD (__host__ __device__ under nvcc, nothing under a
// host compiler) and the bit casts between float and its IEEE bits.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define ARCH_HD __host__ __device__
#else
#define ARCH_HD
#endif

namespace arch::cuda {

ARCH_HD inline std::uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

ARCH_HD inline float bits_float(std::uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}

}  // namespace arch::cuda
