// kernels/cuda/adamw.cu: AdamW (torch.optim.AdamW semantics: decoupled weight decay, bias-corrected
// moments, 1-based step) on fp32 master weights, m and v, then the bf16 working copy of the weights
// by stochastic rounding of the master with the counter-based hash of (seed, element index), so the
// same seed gives the same bits and E[params] = master. Elementwise over n values, the same formula
// as kernels/cpu/adamw.cpp; 4 per thread with 128-bit loads when every pointer allows it.
#include <algorithm>
#include <cmath>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kThreads = 256;

struct AdamWConstants {
    float lr, beta1, beta2, eps, grad_scale;
    float bc1, bc2;  // 1 - beta^step
    float decay;     // 1 - lr * weight_decay
    std::uint64_t seed;
    std::uint64_t first_index;  // the hash index of element 0 (a shard's place in its range)
};

// One element: updates m, v, master in place and returns the new master value.
__device__ __forceinline__ float adamw_one(float& master, float grad, float& m, float& v,
                                           const AdamWConstants& k) {
    const float g = grad * k.grad_scale;
    const float mi = k.beta1 * m + (1.0f - k.beta1) * g;
    const float vi = k.beta2 * v + (1.0f - k.beta2) * g * g;
    m = mi;
    v = vi;
    const float mhat = mi / k.bc1;
    const float vhat = vi / k.bc2;
    master = master * k.decay - k.lr * mhat / (sqrtf(vhat) + k.eps);
    return master;
}

// The first nvec*4 elements as float4 packs, the rest one by one.
__global__ void adamw_kernel(float* __restrict__ master, bf16* __restrict__ params,
                             const float* __restrict__ grads, float* __restrict__ m,
                             float* __restrict__ v, std::size_t n, std::size_t nvec,
                             AdamWConstants k) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (std::size_t i = tid; i < nvec; i += stride) {
        float4 p = reinterpret_cast<const float4*>(master)[i];
        const float4 g = reinterpret_cast<const float4*>(grads)[i];
        float4 mi = reinterpret_cast<const float4*>(m)[i];
        float4 vi = reinterpret_cast<const float4*>(v)[i];
        adamw_one(p.x, g.x, mi.x, vi.x, k);
        adamw_one(p.y, g.y, mi.y, vi.y, k);
        adamw_one(p.z, g.z, mi.z, vi.z, k);
        adamw_one(p.w, g.w, mi.w, vi.w, k);
        reinterpret_cast<float4*>(master)[i] = p;
        reinterpret_cast<float4*>(m)[i] = mi;
        reinterpret_cast<float4*>(v)[i] = vi;
        const std::uint64_t e = k.first_index + i * 4;
        const unsigned lo =
            float_to_bf16_bits_stochastic(p.x, k.seed, e) |
            (static_cast<unsigned>(float_to_bf16_bits_stochastic(p.y, k.seed, e + 1)) << 16);
        const unsigned hi =
            float_to_bf16_bits_stochastic(p.z, k.seed, e + 2) |
            (static_cast<unsigned>(float_to_bf16_bits_stochastic(p.w, k.seed, e + 3)) << 16);
        reinterpret_cast<uint2*>(params)[i] = make_uint2(lo, hi);
    }
    for (std::size_t i = nvec * 4 + tid; i < n; i += stride) {
        float p = master[i], mi = m[i], vi = v[i];
        adamw_one(p, grads[i], mi, vi, k);
        master[i] = p;
        m[i] = mi;
        v[i] = vi;
        params[i] = __ushort_as_bfloat16(float_to_bf16_bits_stochastic(p, k.seed, k.first_index + i));
    }
}

}  // namespace

void adamw_update(float* master, bf16* params, const float* grads, float* m, float* v,
                  std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                  float grad_scale, int step, uint64_t seed, cudaStream_t stream, std::uint64_t first_index) {
    if (n == 0) return;
    if (step < 1) throw Error("adamw_update: step is 1-based, got " + std::to_string(step));
    // The host constants exactly as kernels/cpu/adamw.cpp computes them.
    AdamWConstants k{};
    k.lr = lr;
    k.beta1 = beta1;
    k.beta2 = beta2;
    k.eps = eps;
    k.grad_scale = grad_scale;
    k.bc1 = 1.0f - std::pow(beta1, static_cast<float>(step));
    k.bc2 = 1.0f - std::pow(beta2, static_cast<float>(step));
    k.decay = 1.0f - lr * weight_decay;
    k.seed = seed;
    k.first_index = first_index;
    // float4 for master, grads, m, v and 4 bf16 (8 bytes) for params.
    const bool vec = aligned16(master) && aligned16(grads) && aligned16(m) && aligned16(v) &&
                     (reinterpret_cast<std::uintptr_t>(params) & 7u) == 0;
    const std::size_t nvec = vec ? n / 4 : 0;
    const std::size_t work = std::max(nvec, n - nvec * 4);
    const unsigned grid = grid_stride_blocks(work, kThreads);
    adamw_kernel<<<grid, kThreads, 0, stream>>>(master, params, grads, m, v, n, nvec, k);
    check_launch("adamw_kernel");
}

}  // namespace arch::cuda
