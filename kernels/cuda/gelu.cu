// kernels/cuda/gelu.cu: GELU with the tanh approximation (GPT-2's gelu_new), bf16 in and out, fp32
// inside (gelu_tanh and gelu_tanh_grad of bf16_math.h). Elementwise over n values; 8 per 128-bit
// load when the pointers are 16-byte aligned, the tail and unaligned buffers one at a time.
// Backward overwrites dinp (unlike the CPU op, which accumulates) and allows dinp == dout.
#include <algorithm>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kThreads = 256;


// The first nvec*8 values as packs of 8, the rest one by one.
__global__ void gelu_forward_kernel(bf16* __restrict__ out, const bf16* __restrict__ inp,
                                    std::size_t n, std::size_t nvec) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (std::size_t i = tid; i < nvec; i += stride) {
        float x[8];
        load_bf16x8(x, inp + i * 8);
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = gelu_tanh(x[k]);
        store_bf16x8(out + i * 8, x);
    }
    for (std::size_t i = nvec * 8 + tid; i < n; i += stride)
        out[i] = float_to_bf16(gelu_tanh(bf16_to_float(inp[i])));
}

// dinp may alias dout: each element is read before it is written, by the same thread.
__global__ void gelu_backward_kernel(bf16* dinp, const bf16* __restrict__ inp, const bf16* dout,
                                     std::size_t n, std::size_t nvec) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (std::size_t i = tid; i < nvec; i += stride) {
        float x[8], d[8];
        load_bf16x8(x, inp + i * 8);
        load_bf16x8(d, dout + i * 8);
#pragma unroll
        for (int k = 0; k < 8; ++k) d[k] *= gelu_tanh_grad(x[k]);
        store_bf16x8(dinp + i * 8, d);
    }
    for (std::size_t i = nvec * 8 + tid; i < n; i += stride) {
        dinp[i] = float_to_bf16(gelu_tanh_grad(bf16_to_float(inp[i])) * bf16_to_float(dout[i]));
    }
}

}  // namespace

void gelu_forward(bf16* out, const bf16* inp, std::size_t n, cudaStream_t stream) {
    if (n == 0) return;
    const std::size_t nvec = aligned16(out) && aligned16(inp) ? n / 8 : 0;
    gelu_forward_kernel<<<grid_stride_blocks(std::max(nvec, n - nvec * 8), kThreads), kThreads, 0, stream>>>(out, inp,
                                                                                         n, nvec);
    check_launch("gelu_forward_kernel");
}

void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, std::size_t n,
                   cudaStream_t stream) {
    if (n == 0) return;
    const std::size_t nvec = aligned16(dinp) && aligned16(inp) && aligned16(dout) ? n / 8 : 0;
    gelu_backward_kernel<<<grid_stride_blocks(std::max(nvec, n - nvec * 8), kThreads), kThreads, 0, stream>>>(
        dinp, inp, dout, n, nvec);
    check_launch("gelu_backward_kernel");
}

}  // namespace arch::cuda
