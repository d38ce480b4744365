// kernels/cuda/rope.cu: rotary position embeddings on the q and k heads of a qkv buffer, bf16 in
// and out, fp32 cos/sin tables and arithmetic (one rounding per output). Shapes: inp, out, dout,
// dinp (B,T,(NH+2KV)hs), q heads first, then k, then v; cos, sin (maxT, hs/2). HF Llama's
// rotate-half pairing: element i of a head pairs with i + hs/2. One thread per pair reads both
// values before writing both, so out may be inp (the model rotates in place). v heads are copied.
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kThreads = 256;

// BACKWARD: the transposed rotation (d1, d2) -> (d1 cos + d2 sin, d2 cos - d1 sin).
template <bool BACKWARD>
__global__ void rope_kernel(bf16* out, const bf16* inp, const float* __restrict__ cos,
                            const float* __restrict__ sin, int N, int T, int NH, int KV, int hs) {
    const int half = hs / 2, heads = NH + 2 * KV, rotated = NH + KV;
    const std::size_t pairs = static_cast<std::size_t>(N) * heads * half;
    for (std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         idx < pairs; idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const int i = static_cast<int>(idx % half);
        const std::size_t nh = idx / half;
        const int head = static_cast<int>(nh % heads);
        const std::size_t n = nh / heads;
        const std::size_t at = n * heads * hs + static_cast<std::size_t>(head) * hs + i;
        const float x1 = __bfloat162float(inp[at]), x2 = __bfloat162float(inp[at + half]);
        float y1 = x1, y2 = x2;
        if (head < rotated) {
            const std::size_t ti = static_cast<std::size_t>(n % T) * half + i;
            const float c = cos[ti], s = sin[ti];
            if (BACKWARD) {
                y1 = x1 * c + x2 * s;
                y2 = x2 * c - x1 * s;
            } else {
                y1 = x1 * c - x2 * s;
                y2 = x2 * c + x1 * s;
            }
        }
        out[at] = __float2bfloat16(y1);
        out[at + half] = __float2bfloat16(y2);
    }
}

template <bool BACKWARD>
void launch(bf16* out, const bf16* inp, const float* cos, const float* sin, int B, int T, int NH,
            int KV, int hs, cudaStream_t stream, const char* op) {
    if (B <= 0 || T <= 0 || NH <= 0 || KV <= 0 || hs <= 0 || hs % 2 != 0)
        throw Error(std::string(op) + ": bad shape B=" + std::to_string(B) + " T=" +
                    std::to_string(T) + " NH=" + std::to_string(NH) + " KV=" + std::to_string(KV) +
                    " hs=" + std::to_string(hs) + ": expected positive sizes and an even hs");
    const int N = B * T;
    const std::size_t pairs = static_cast<std::size_t>(N) * (NH + 2 * KV) * (hs / 2);
    rope_kernel<BACKWARD><<<grid_stride_blocks(pairs, kThreads), kThreads, 0, stream>>>(
        out, inp, cos, sin, N, T, NH, KV, hs);
    check_launch(op);
}

}  // namespace

void rope_forward(bf16* out, const bf16* inp, const float* cos, const float* sin, int B, int T,
                  int NH, int KV, int hs, cudaStream_t stream) {
    launch<false>(out, inp, cos, sin, B, T, NH, KV, hs, stream, "rope_forward");
}

void rope_backward(bf16* dinp, const bf16* dout, const float* cos, const float* sin, int B, int T,
                   int NH, int KV, int hs, cudaStream_t stream) {
    launch<true>(dinp, dout, cos, sin, B, T, NH, KV, hs, stream, "rope_backward");
}

}  // namespace arch::cuda
