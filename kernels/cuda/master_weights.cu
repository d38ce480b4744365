// kernels/cuda/master_weights.cu: kernels on the fp32 master weights outside AdamW: the stochastic
// rounding to bf16 that AdamW's last step applied (recomputed when a run resumes), and the
// pseudo-gradient difference Δ = θ - θ_i (one IEEE subtraction, so the CPU's bits), and the sum a
// ZeRO-3 shard accumulates its gradients with.
#include <string>

#include "core/error.h"
#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kThreads = 256;


// Index i of the range gets hash(seed, first + i): the same as adamw_update over the same range.
__global__ void stochastic_round_kernel(bf16* params, const float* master, std::size_t n, uint64_t seed,
                                        uint64_t first) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        params[i] = __ushort_as_bfloat16(float_to_bf16_bits_stochastic(master[i], seed, first + i));
}

__global__ void add_kernel(float* x, const float* y, std::size_t n) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        x[i] = __fadd_rn(x[i], y[i]);
}

__global__ void subtract_kernel(float* x, const float* y, std::size_t n) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        x[i] = __fsub_rn(x[i], y[i]);
}

}  // namespace

void stochastic_round_bf16(bf16* params, const float* master, std::size_t n, uint64_t seed, cudaStream_t stream,
                           uint64_t first_index) {
    if (n == 0) return;
    stochastic_round_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(params, master, n, seed,
                                                                                        first_index);
    check_launch("stochastic_round_bf16");
}

void subtract(float* x, const float* y, std::size_t n, cudaStream_t stream) {
    if (n == 0) return;
    subtract_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, y, n);
    check_launch("subtract");
}

void add(float* x, const float* y, std::size_t n, cudaStream_t stream) {
    if (n == 0) return;
    add_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, y, n);
    check_launch("add");
}

}  // namespace arch::cuda
