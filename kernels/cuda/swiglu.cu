// kernels/cuda/swiglu.cu: the Llama family's SwiGLU gate, forward and backward, bf16 in and out,
// fp32 arithmetic (one rounding per output). Shapes: inp, dinp (N, 2F) hold gate (first F) and up
// (next F) per row, as the fused fcw produces them; out, dout (N, F). silu(g) = g sigmoid(g).
// Backward overwrites dinp (the model's d(fch) has no other contribution). 8 values per 128-bit
// load when F % 8 == 0 and the pointers are 16-byte aligned, one at a time otherwise.
#include <string>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float sigmoid(float g) {
    return 1.0f / (1.0f + expf(-g));
}

// out = silu(gate) * up; one thread per VEC columns of one row.
template <int VEC>
__global__ void swiglu_forward_kernel(bf16* __restrict__ out, const bf16* __restrict__ inp, int N,
                                      int F) {
    const int groups = F / VEC;
    const std::size_t total = static_cast<std::size_t>(N) * groups;
    for (std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         idx < total; idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const std::size_t n = idx / groups;
        const int j = static_cast<int>(idx % groups) * VEC;
        const bf16* row = inp + n * 2 * F;
        float g[VEC], u[VEC];
        load_bf16<VEC>(g, row + j);
        load_bf16<VEC>(u, row + F + j);
#pragma unroll
        for (int k = 0; k < VEC; ++k) g[k] = g[k] * sigmoid(g[k]) * u[k];
        store_bf16<VEC>(out + n * F + j, g);
    }
}

// dgate = dout up sig(g) (1 + g (1 - sig(g))); dup = dout silu(g)
template <int VEC>
__global__ void swiglu_backward_kernel(bf16* __restrict__ dinp, const bf16* __restrict__ inp,
                                       const bf16* __restrict__ dout, int N, int F) {
    const int groups = F / VEC;
    const std::size_t total = static_cast<std::size_t>(N) * groups;
    for (std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         idx < total; idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const std::size_t n = idx / groups;
        const int j = static_cast<int>(idx % groups) * VEC;
        const bf16* row = inp + n * 2 * F;
        float g[VEC], u[VEC], dy[VEC], dg[VEC], du[VEC];
        load_bf16<VEC>(g, row + j);
        load_bf16<VEC>(u, row + F + j);
        load_bf16<VEC>(dy, dout + n * F + j);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
            const float sig = sigmoid(g[k]);
            dg[k] = dy[k] * u[k] * sig * (1.0f + g[k] * (1.0f - sig));
            du[k] = dy[k] * g[k] * sig;
        }
        store_bf16<VEC>(dinp + n * 2 * F + j, dg);
        store_bf16<VEC>(dinp + n * 2 * F + F + j, du);
    }
}

void check_shape(const char* op, int N, int F) {
    if (N <= 0 || F <= 0)
        throw Error(std::string(op) + ": N and F must be positive, got N=" + std::to_string(N) +
                    " F=" + std::to_string(F));
}

}  // namespace

void swiglu_forward(bf16* out, const bf16* inp, int N, int F, cudaStream_t stream) {
    check_shape("swiglu_forward", N, F);
    const bool vec = F % 8 == 0 && aligned16(out) && aligned16(inp);
    const std::size_t work = static_cast<std::size_t>(N) * (vec ? F / 8 : F);
    const unsigned grid = grid_stride_blocks(work, kThreads);
    if (vec) {
        swiglu_forward_kernel<8><<<grid, kThreads, 0, stream>>>(out, inp, N, F);
    } else {
        swiglu_forward_kernel<1><<<grid, kThreads, 0, stream>>>(out, inp, N, F);
    }
    check_launch("swiglu_forward_kernel");
}

void swiglu_backward(bf16* dinp, const bf16* inp, const bf16* dout, int N, int F,
                     cudaStream_t stream) {
    check_shape("swiglu_backward", N, F);
    const bool vec = F % 8 == 0 && aligned16(dinp) && aligned16(inp) && aligned16(dout);
    const std::size_t work = static_cast<std::size_t>(N) * (vec ? F / 8 : F);
    const unsigned grid = grid_stride_blocks(work, kThreads);
    if (vec) {
        swiglu_backward_kernel<8><<<grid, kThreads, 0, stream>>>(dinp, inp, dout, N, F);
    } else {
        swiglu_backward_kernel<1><<<grid, kThreads, 0, stream>>>(dinp, inp, dout, N, F);
    }
    check_launch("swiglu_backward_kernel");
}

}  // namespace arch::cuda
