// kernels/cuda/bf16_math.h: the scalar maths of the bf16 kernels, written once for the device and
// the host (CPU tests check it): fp32 <-> bf16 bits (round to nearest even, the same bits as
// compression's bf16 codec: finite values that round past the largest bf16 saturate to +-3.3895e38;
// inf stays inf, NaN stays a quiet NaN), unbiased stochastic rounding from a counter-based hash of
// (seed, index), and GELU (tanh approximation) with its derivative. Below `#ifdef __CUDACC__`:
// device-only pieces the kernels share (128-bit bf16/fp32 packs, warp sums, the fixed-order sum of
// per-block partials).
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#include "kernels/cuda/host_device.h"

namespace arch::cuda {

// ---- bits (float_bits / bits_float: host_device.h) ---------------------------------------------

ARCH_HD inline float bf16_bits_to_float(std::uint16_t b) {
    return bits_float(static_cast<std::uint32_t>(b) << 16);
}

// NaN -> quiet NaN of the same sign; inf -> inf; finite values beyond the largest bf16 -> +-0x7f7f.
ARCH_HD inline std::uint16_t special_to_bf16_bits(std::uint32_t x) {
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
    if ((x & 0x7fffffffu) == 0x7f800000u) return static_cast<std::uint16_t>(x >> 16);
    return static_cast<std::uint16_t>(((x >> 16) & 0x8000u) | 0x7f7fu);
}

// Round to nearest, ties to even (bit-identical to compression's bf16 codec for finite inputs).
ARCH_HD inline std::uint16_t float_to_bf16_bits(float f) {
    const std::uint32_t x = float_bits(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return special_to_bf16_bits(x);
    const std::uint32_t r = x + 0x7fffu + ((x >> 16) & 1u);
    const std::uint16_t b = static_cast<std::uint16_t>(r >> 16);
    return (b & 0x7f80u) == 0x7f80u ? special_to_bf16_bits(x) : b;
}

// Counter-based 64-bit hash (splitmix64's finaliser applied to the seed, then to seed-hash +
// index): independent-looking bits for every (seed, index), no state, the same on host and device.
ARCH_HD inline std::uint64_t mix64(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

ARCH_HD inline std::uint64_t hash_seed_index(std::uint64_t seed, std::uint64_t index) {
    return mix64(mix64(seed + 0x9e3779b97f4a7c15ull) + index * 0x9e3779b97f4a7c15ull);
}

// Stochastic rounding to one of the two bf16 neighbours of f (in magnitude: truncated and next),
// the larger magnitude with probability (dropped 16 bits) / 2^16, i.e. exactly the fractional
// distance, so E[result] = f. Representable values stay exact. NaN/inf as in float_to_bf16_bits;
// rounding up past the largest bf16 saturates there.
ARCH_HD inline std::uint16_t float_to_bf16_bits_stochastic(float f, std::uint64_t seed,
                                                           std::uint64_t index) {
    const std::uint32_t x = float_bits(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return special_to_bf16_bits(x);
    const std::uint32_t noise =
        static_cast<std::uint32_t>(hash_seed_index(seed, index) >> 48);  // 16 bits
    const std::uint16_t b = static_cast<std::uint16_t>((x + noise) >> 16);
    return (b & 0x7f80u) == 0x7f80u ? special_to_bf16_bits(x) : b;
}

// ---- GELU, tanh approximation (GPT-2's gelu_new), fp32 ----------------------------------------
constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
ARCH_HD inline float gelu_tanh(float x) {
    const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

// d/dx of gelu_tanh
ARCH_HD inline float gelu_tanh_grad(float x) {
    const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
    const float th = tanhf(u);
    const float sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) +
           0.5f * x * sech2 * kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
}

}  // namespace arch::cuda

#ifdef __CUDACC__
// ---- device-only helpers shared by the kernels (kernels/cuda/*.cu) ------------------------------
#include <cuda_bf16.h>

#include <cstddef>

#include "kernels/cuda/cuda_check.h"

namespace arch::cuda {

__device__ __forceinline__ float bf16_to_float(__nv_bfloat16 v) {
    return bf16_bits_to_float(__bfloat16_as_ushort(v));
}
__device__ __forceinline__ __nv_bfloat16 float_to_bf16(float f) {
    return __ushort_as_bfloat16(float_to_bf16_bits(f));
}

// 8 bf16 in one 16-byte word (element k in bits 16*(k%2) of word k/2, little endian).
__device__ __forceinline__ void load_bf16x8(float (&f)[8], const __nv_bfloat16* p) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        f[2 * k] = bits_float(w[k] << 16);
        f[2 * k + 1] = bits_float(w[k] & 0xffff0000u);
    }
}

__device__ __forceinline__ void store_bf16x8(__nv_bfloat16* p, const float (&f)[8]) {
    unsigned w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        w[k] = static_cast<unsigned>(float_to_bf16_bits(f[2 * k])) |
               (static_cast<unsigned>(float_to_bf16_bits(f[2 * k + 1])) << 16);
    }
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

// VEC (8 or 1) consecutive bf16 as floats; 8 needs 16-byte alignment.
template <int VEC>
__device__ __forceinline__ void load_bf16(float (&f)[VEC], const __nv_bfloat16* p) {
    if constexpr (VEC == 8) {
        load_bf16x8(f, p);
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) f[k] = bf16_to_float(p[k]);
    }
}

template <int VEC>
__device__ __forceinline__ void store_bf16(__nv_bfloat16* p, const float (&f)[VEC]) {
    if constexpr (VEC == 8) {
        store_bf16x8(p, f);
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) p[k] = float_to_bf16(f[k]);
    }
}

// One warp, one row of C: residual = bf16(a + b), lane l taking groups of VEC channels l*VEC,
// (l+32)*VEC, ... (the residual add the fused norms run first; they then read the row back from
// the same lanes, so no barrier is needed).
template <int VEC>
__device__ __forceinline__ void add_row_bf16(__nv_bfloat16* residual, const __nv_bfloat16* a,
                                             const __nv_bfloat16* b, int C, int lane) {
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float va[VEC], vb[VEC];
        load_bf16<VEC>(va, a + c);
        load_bf16<VEC>(vb, b + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) va[k] += vb[k];
        store_bf16<VEC>(residual + c, va);
    }
}

inline bool aligned16(const void* p) {
    return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

// Butterfly sum over the 32 lanes: every lane gets the same bits, in the same order every run.
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// out[c] += sum of partials[p * ld + c] over p = 0..P-1, in a fixed order: with block (32, kY),
// thread y sums p = y, y+kY, y+2kY, ... in that order, then the kY sums are added in order y =
// 0..kY-1. So the same bits every run. Grid: ceil(cols / 32) blocks. A template in an unnamed
// namespace so each .cu that launches it owns its copy (the project builds without relocatable
// device code).
namespace {
template <int kY = 8>
__global__ void __launch_bounds__(32 * kY)
    sum_partials_kernel(float* __restrict__ out, const float* __restrict__ partials, int P,
                        int cols, int ld) {
    __shared__ float sums[kY][32];
    const int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < cols) {
        for (int p = threadIdx.y; p < P; p += kY)
            s += partials[static_cast<std::size_t>(p) * ld + c];
    }
    sums[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float total = 0.0f;
#pragma unroll
        for (int y = 0; y < kY; ++y) total += sums[y][threadIdx.x];
        out[c] += total;
    }
}

// Enqueues out[0..cols) += the fixed-order sum over p < P of partials[p * ld + c] (fp32).
inline void launch_sum_partials(float* out, const float* partials, int P, int cols, int ld,
                                cudaStream_t stream) {
    if (cols <= 0) return;
    sum_partials_kernel<8>
        <<<(cols + 31) / 32, dim3(32, 8), 0, stream>>>(out, partials, P, cols, ld);
    check_launch("sum_partials_kernel");
}
}  // namespace

}  // namespace arch::cuda
#endif  // __CUDACC__
