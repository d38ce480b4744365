// kernels/cuda/attention_unfused.cu: causal self-attention with grouped KV heads through batched
// GEMMs (llm.c's layout), bf16. Forward: permute inp (B,T,NH+2KV heads,hs) to q (B,NH,T,hs) and k,
// v (B,KV,T,hs); S = q k^T / sqrt(hs) in fp32; P = causal softmax(S) in bf16 (saved, zeros above
// the diagonal); O = P v; unpermute O to out (B,T,C). Backward: dP = dO v^T (fp32), dv = P^T dO, dS
// = P
// * (dP - rowsum(dP * P)), dq = dS k / sqrt(hs), dk = dS^T q / sqrt(hs), all written (not added)
// into dinp (B,T,(NH+2KV)hs). The G = NH/KV query heads that share a KV head are adjacent in
// (B,NH,T,hs), so each GEMM batch entry is one (b, KV head) with the group's G*T query rows
// stacked: dk and dv sum the group inside the GEMM's fp32 reduction. G = 1 is exactly GPT-2's
// launches. No atomics: reruns give the same bits.
#include <cuda_bf16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"

namespace arch::cuda::detail {

namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

// Copies 8 bf16 values (16 bytes) per thread between the token layout (B,T,row_stride), head h at
// columns h*hs, and the head layout (B,NH,T,hs). kToHeads: token -> head, else head -> token.
template <bool kToHeads>
__global__ void permute_heads_kernel(bf16* __restrict__ dst, const bf16* __restrict__ src,
                                     int row_stride, int B, int T, int NH, int hs) {
    const int chunks = hs / 8;
    const std::size_t total = static_cast<std::size_t>(B) * NH * T * chunks;
    for (std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         idx < total; idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const int d = static_cast<int>(idx % chunks) * 8;
        const std::size_t bht = idx / chunks;  // ((b*NH + h)*T + t)
        const int t = static_cast<int>(bht % T);
        const std::size_t bh = bht / T;
        const int h = static_cast<int>(bh % NH);
        const std::size_t b = bh / NH;
        const std::size_t head_i = bht * hs + d;
        const std::size_t token_i = (b * T + t) * row_stride + static_cast<std::size_t>(h) * hs + d;
        const std::size_t from = kToHeads ? token_i : head_i, to = kToHeads ? head_i : token_i;
        *reinterpret_cast<uint4*>(dst + to) = *reinterpret_cast<const uint4*>(src + from);
    }
}

template <bool kToHeads>
void permute_heads(bf16* dst, const bf16* src, int row_stride, int B, int T, int NH, int hs,
                   cudaStream_t stream) {
    const std::size_t total = static_cast<std::size_t>(B) * NH * T * (hs / 8);
    permute_heads_kernel<kToHeads><<<grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(
        dst, src, row_stride, B, T, NH, hs);
    check_launch("attention permute_heads_kernel");
}

__device__ float warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
    return v;
}

__device__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(kFullMask, v, off);
    return v;
}

// One warp per row r of (B*NH*T) rows, t = r % T: P[j] = exp(S[j] - max) / sum for j <= t, 0 for j
// > t. S already holds the scaled scores. Fixed lane order and butterfly reductions: deterministic.
__global__ void causal_softmax_kernel(bf16* __restrict__ p, const float* __restrict__ s,
                                      std::size_t rows, int T) {
    const std::size_t row =
        static_cast<std::size_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (row >= rows) return;  // warp-uniform
    const int lane = threadIdx.x % 32;
    const int t = static_cast<int>(row % T);
    const float* srow = s + row * T;
    bf16* prow = p + row * T;
    float m = -INFINITY;
    for (int j = lane; j <= t; j += 32) m = fmaxf(m, srow[j]);
    m = warp_max(m);  // finite: j = 0 is always present
    float sum = 0.0f;
    for (int j = lane; j <= t; j += 32) sum += expf(srow[j] - m);
    sum = warp_sum(sum);
    const float inv = 1.0f / sum;
    for (int j = lane; j < T; j += 32)
        prow[j] = __float2bfloat16(j <= t ? expf(srow[j] - m) * inv : 0.0f);
}

// dS[j] = P[j] * (dP[j] - sum_k P[k] dP[k]) for j <= t, 0 above the diagonal.
__global__ void causal_softmax_backward_kernel(bf16* __restrict__ ds, const float* __restrict__ dp,
                                               const bf16* __restrict__ p, std::size_t rows,
                                               int T) {
    const std::size_t row =
        static_cast<std::size_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (row >= rows) return;  // warp-uniform
    const int lane = threadIdx.x % 32;
    const int t = static_cast<int>(row % T);
    const float* dprow = dp + row * T;
    const bf16* prow = p + row * T;
    bf16* dsrow = ds + row * T;
    float dot = 0.0f;
    for (int j = lane; j <= t; j += 32) dot += __bfloat162float(prow[j]) * dprow[j];
    dot = warp_sum(dot);
    for (int j = lane; j < T; j += 32)
        dsrow[j] = __float2bfloat16(j <= t ? __bfloat162float(prow[j]) * (dprow[j] - dot) : 0.0f);
}

unsigned row_blocks(std::size_t rows) {
    const std::size_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    if (blocks > 0x7fffffffu) throw Error("attention (unfused): too many rows for one launch");
    return static_cast<unsigned>(blocks);
}

}  // namespace

void attention_unfused_forward(GemmContext& ctx, bf16* out, bf16* p, bf16* q, bf16* k, bf16* v,
                               bf16* o, float* s, const bf16* inp, int B, int T, int C, int NH,
                               int KV) {
    const int hs = C / NH, G = NH / KV, width = C + 2 * KV * hs;
    const cudaStream_t stream = ctx.stream();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    permute_heads<true>(q, inp, width, B, T, NH, hs, stream);
    permute_heads<true>(k, inp + C, width, B, T, KV, hs, stream);
    permute_heads<true>(v, inp + C + KV * hs, width, B, T, KV, hs, stream);

    // Per (b, KV head): Q and O are (G*T x hs), S and P (G*T x T), K and V (T x hs).
    const long long th = static_cast<long long>(T) * hs, tt = static_cast<long long>(T) * T;
    const int n = B * KV, GT = G * T;
    // S (fp32) = scale * q k^T
    gemm(ctx, s, true, q, false, k, true, GT, T, hs, scale, 0.0f, GemmBatch{n, G * th, th, G * tt});
    const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
    causal_softmax_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(p, s, rows, T);
    check_launch("attention causal_softmax_kernel");
    // O = P v
    gemm(ctx, o, false, p, false, v, false, GT, hs, T, 1.0f, 0.0f,
         GemmBatch{n, G * tt, th, G * th});
    permute_heads<false>(out, o, C, B, T, NH, hs, stream);
}

void attention_unfused_backward(GemmContext& ctx, bf16* dinp, bf16* q, bf16* k, bf16* v,
                                bf16* dout_p, bf16* dq, bf16* dk, bf16* dv, float* dp, bf16* ds,
                                const bf16* dout, const bf16* inp, const bf16* p, int B, int T,
                                int C, int NH, int KV) {
    const int hs = C / NH, G = NH / KV, width = C + 2 * KV * hs;
    const cudaStream_t stream = ctx.stream();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    permute_heads<true>(q, inp, width, B, T, NH, hs, stream);
    permute_heads<true>(k, inp + C, width, B, T, KV, hs, stream);
    permute_heads<true>(v, inp + C + KV * hs, width, B, T, KV, hs, stream);
    permute_heads<true>(dout_p, dout, C, B, T, NH, hs, stream);

    const long long th = static_cast<long long>(T) * hs, tt = static_cast<long long>(T) * T;
    const int n = B * KV, GT = G * T;
    // dP (G*T x T, fp32) = dO (G*T x hs) v^T
    gemm(ctx, dp, true, dout_p, false, v, true, GT, T, hs, 1.0f, 0.0f,
         GemmBatch{n, G * th, th, G * tt});
    // dv (T x hs) = P^T (T x G*T) dO (G*T x hs): the group's sum
    gemm(ctx, dv, false, p, true, dout_p, false, T, hs, GT, 1.0f, 0.0f,
         GemmBatch{n, G * tt, G * th, th});
    const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
    causal_softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(ds, dp, p, rows, T);
    check_launch("attention causal_softmax_backward_kernel");
    // dq (G*T x hs) = scale * dS (G*T x T) k (T x hs); dk (T x hs) = scale * dS^T q (group sum)
    gemm(ctx, dq, false, ds, false, k, false, GT, hs, T, scale, 0.0f,
         GemmBatch{n, G * tt, th, G * th});
    gemm(ctx, dk, false, ds, true, q, false, T, hs, GT, scale, 0.0f,
         GemmBatch{n, G * tt, G * th, th});
    permute_heads<false>(dinp, dq, width, B, T, NH, hs, stream);
    permute_heads<false>(dinp + C, dk, width, B, T, KV, hs, stream);
    permute_heads<false>(dinp + C + KV * hs, dv, width, B, T, KV, hs, stream);
}

}  // namespace arch::cuda::detail
