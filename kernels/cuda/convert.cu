// kernels/cuda/convert.cu: fp32 <-> bf16 conversions of whole buffers (weights to the device copy,
// gradients and activations back for checks). Round to nearest even with the bits of bf16_math.h,
// i.e. the same bytes as compression's bf16 codec. Elementwise over n values; 128-bit loads and
// stores when both pointers are 16-byte aligned, scalar otherwise (and for the tail).
#include <algorithm>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kThreads = 256;


// dst[i] = bf16(src[i]); the first nvec*4 values as float4 -> 4 bf16, the rest one by one.
__global__ void to_bf16_kernel(bf16* __restrict__ dst, const float* __restrict__ src, std::size_t n,
                               std::size_t nvec) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (std::size_t i = tid; i < nvec; i += stride) {
        const float4 f = reinterpret_cast<const float4*>(src)[i];
        const unsigned lo =
            float_to_bf16_bits(f.x) | (static_cast<unsigned>(float_to_bf16_bits(f.y)) << 16);
        const unsigned hi =
            float_to_bf16_bits(f.z) | (static_cast<unsigned>(float_to_bf16_bits(f.w)) << 16);
        reinterpret_cast<uint2*>(dst)[i] = make_uint2(lo, hi);
    }
    for (std::size_t i = nvec * 4 + tid; i < n; i += stride) dst[i] = float_to_bf16(src[i]);
}

// dst[i] = float(src[i]); the first nvec*8 values as 8 bf16 -> 2 float4, the rest one by one.
__global__ void to_fp32_kernel(float* __restrict__ dst, const bf16* __restrict__ src, std::size_t n,
                               std::size_t nvec) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (std::size_t i = tid; i < nvec; i += stride) {
        float f[8];
        load_bf16x8(f, src + i * 8);
        float4* d = reinterpret_cast<float4*>(dst) + i * 2;
        d[0] = make_float4(f[0], f[1], f[2], f[3]);
        d[1] = make_float4(f[4], f[5], f[6], f[7]);
    }
    for (std::size_t i = nvec * 8 + tid; i < n; i += stride) dst[i] = bf16_to_float(src[i]);
}

}  // namespace

void to_bf16(bf16* dst, const float* src, std::size_t n, cudaStream_t stream) {
    if (n == 0) return;
    const std::size_t nvec = aligned16(dst) && aligned16(src) ? n / 4 : 0;
    to_bf16_kernel<<<grid_stride_blocks(std::max<std::size_t>(nvec, n - nvec * 4), kThreads), kThreads, 0, stream>>>(
        dst, src, n, nvec);
    check_launch("to_bf16_kernel");
}

void to_fp32(float* dst, const bf16* src, std::size_t n, cudaStream_t stream) {
    if (n == 0) return;
    const std::size_t nvec = aligned16(dst) && aligned16(src) ? n / 8 : 0;
    to_fp32_kernel<<<grid_stride_blocks(std::max<std::size_t>(nvec, n - nvec * 8), kThreads), kThreads, 0, stream>>>(
        dst, src, n, nvec);
    check_launch("to_fp32_kernel");
}

}  // namespace arch::cuda
