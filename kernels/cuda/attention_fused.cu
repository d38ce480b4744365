// kernels/cuda/attention_fused.cu: flash-style causal self-attention (FlashAttention-2's
// algorithm) with grouped KV heads, bf16 in and out, fp32 accumulators and softmax statistics,
// tensor cores through nvcuda::wmma (bf16 16x16x16). inp rows are (NH+2KV)hs wide: q heads, k
// heads, v heads; query head h reads KV head h / (NH/KV). Forward: a block owns 64 query rows of
// one (b, h) (4 warps x 16 rows), streams 64-key tiles of K and V through shared memory with an
// online softmax, and writes O (B,T,C) and the log-sum-exp (B,NH,T) fp32. Backward recomputes P =
// exp(S - lse): delta_i = dO_i . O_i, then dQ (a block per query tile, loop over key tiles <= it)
// and dK, dV (a block per key tile of one KV head, looping over its group's query heads in order
// and, inside, over query tiles >= it), so every output element is written once by one thread: no
// atomics, same bits on every rerun. KV = NH runs GPT-2's exact loops. hs is a template (32, 64,
// 128). Fragments move through shared memory only (load/store_matrix_sync), so no fragment layout
// is assumed.
#include <cuda_bf16.h>
#include <mma.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_check.h"

namespace arch::cuda::detail {

namespace {

using bf16 = __nv_bfloat16;
namespace wmma = nvcuda::wmma;

constexpr int kTile = 64;  // query rows per block = keys per tile
constexpr int kWarps = 4;  // each warp owns 16 rows of the block's tile
constexpr int kThreads = 32 * kWarps;
constexpr int kSLd = kTile + 4;  // ld (floats) of a warp's 16 x 64 score staging tile
constexpr int kPLd = kTile + 8;  // ld (bf16) of a warp's 16 x 64 probability tile
constexpr unsigned kFullMask = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBt =
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;  // X^T of a row-major X
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Shared memory of one block, in bytes. Tiles of 64 rows x hs bf16 use ld = hs + 8 (fewer bank
// conflicts; keeps every 16-row fragment 32-byte aligned). Everything below is a multiple of 128
// bytes.
template <int HS>
struct Layout {
    static constexpr int kLd = HS + 8;   // bf16 tile ld
    static constexpr int kOLd = HS + 4;  // fp32 16 x hs staging ld
    static constexpr int kTileBytes = kTile * kLd * 2;
    static constexpr int kFwdStage = 16 * (kOLd > kSLd ? kOLd : kSLd);  // floats per warp (forward)
    static constexpr int kProbBytes = kWarps * 16 * kPLd * 2;
    static constexpr int kForward = 3 * kTileBytes + kWarps * kFwdStage * 4 + kProbBytes;
    static constexpr int kBackward =
        4 * kTileBytes + kWarps * 16 * kSLd * 4 + kProbBytes + 2 * kTile * 4;
    // After the backward loops, two tiles (2 * kTileBytes) hold a block's 64 x hs fp32 result.
    static_assert(2 * kTileBytes >= kWarps * 16 * kOLd * 4,
                  "result staging does not fit two tiles");
};

// Where batch b's heads start in inp (B,T,(NH+2KV)HS): q head h, and the k and v heads that query
// head h reads (h / (NH/KV)). Row stride rs elements.
template <int HS>
struct Heads {
    const bf16* base;
    std::size_t rs;
    int C, KV, group;
    __device__ Heads(const bf16* inp, int b, int T, int NH, int kv)
        : rs(static_cast<std::size_t>(NH + 2 * kv) * HS), C(NH * HS), KV(kv), group(NH / kv) {
        base = inp + static_cast<std::size_t>(b) * T * rs;
    }
    __device__ const bf16* q(int h) const { return base + static_cast<std::size_t>(h) * HS; }
    __device__ const bf16* k(int h) const {
        return base + C + static_cast<std::size_t>(h / group) * HS;
    }
    __device__ const bf16* v(int h) const {
        return base + C + static_cast<std::size_t>(KV + h / group) * HS;
    }
};

// dst (64 x HS, ld HS+8) = rows t0..t0+63 of src (row stride row_stride elements); rows >= T are
// zero.
template <int HS>
__device__ void load_tile(bf16* dst, const bf16* src, std::size_t row_stride, int t0, int T) {
    constexpr int kChunks = HS / 8;  // 16-byte chunks per row
    for (int c = threadIdx.x; c < kTile * kChunks; c += kThreads) {
        const int r = c / kChunks, d = (c % kChunks) * 8;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (t0 + r < T)
            v = *reinterpret_cast<const uint4*>(src +
                                                static_cast<std::size_t>(t0 + r) * row_stride + d);
        *reinterpret_cast<uint4*>(dst + r * Layout<HS>::kLd + d) = v;
    }
}

// Warp: stage (16 x 64, ld kSLd) columns [16*n_begin, 16*n_end) = a (16 x HS) x^T, x (64 x HS); the
// other columns are left as they were (callers mask them).
template <int HS>
__device__ void warp_abt(float* stage, const bf16* a, const bf16* x, int n_begin, int n_end) {
    constexpr int kLd = Layout<HS>::kLd;
    for (int n = n_begin; n < n_end; ++n) {
        FragC acc;
        wmma::fill_fragment(acc, 0.0f);
#pragma unroll
        for (int k = 0; k < HS / 16; ++k) {
            FragA fa;
            FragBt fb;
            wmma::load_matrix_sync(fa, a + k * 16, kLd);
            wmma::load_matrix_sync(fb, x + n * 16 * kLd + k * 16, kLd);
            wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(stage + n * 16, acc, kSLd, wmma::mem_row_major);
    }
}

// Warp: acc (16 x HS) += p (16 x 64, ld kPLd) columns [16*k_begin, 16*k_end) times rows of y (64 x
// HS).
template <int HS>
__device__ void warp_ab_acc(FragC (&acc)[HS / 16], const bf16* p, const bf16* y, int k_begin,
                            int k_end) {
    constexpr int kLd = Layout<HS>::kLd;
    for (int k = k_begin; k < k_end; ++k) {
        FragA fa;
        wmma::load_matrix_sync(fa, p + k * 16, kPLd);
#pragma unroll
        for (int n = 0; n < HS / 16; ++n) {
            FragB fb;
            wmma::load_matrix_sync(fb, y + k * 16 * kLd + n * 16, kLd);
            wmma::mma_sync(acc[n], fa, fb, acc[n]);
        }
    }
}

template <int HS>
__device__ void zero(FragC (&acc)[HS / 16]) {
#pragma unroll
    for (int n = 0; n < HS / 16; ++n) wmma::fill_fragment(acc[n], 0.0f);
}

// Warp: stage (16 x HS, ld kOLd) = acc.
template <int HS>
__device__ void store_acc(float* stage, const FragC (&acc)[HS / 16]) {
#pragma unroll
    for (int n = 0; n < HS / 16; ++n)
        wmma::store_matrix_sync(stage + n * 16, acc[n], Layout<HS>::kOLd, wmma::mem_row_major);
}

// Lane roles in a warp's 16-row tiles: row r = lane / 2, columns half + 2x (x = 0, 1, ...), so the
// two lanes of a row combine with one shuffle, and reads of a staging row hit at most 2 lanes per
// bank.

// Forward. grid (B*NH, ceil(T/64)); the longest query tiles start first.
template <int HS>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(bf16* __restrict__ out, float* __restrict__ lse,
                             const bf16* __restrict__ inp, int T, int NH, int KV,
                             float scale_log2) {
    using L = Layout<HS>;
    extern __shared__ __align__(128) unsigned char smem[];
    bf16* qs = reinterpret_cast<bf16*>(smem);
    bf16* ks = qs + kTile * L::kLd;
    bf16* vs = ks + kTile * L::kLd;
    float* stage_all = reinterpret_cast<float*>(vs + kTile * L::kLd);
    bf16* ps_all = reinterpret_cast<bf16*>(stage_all + kWarps * L::kFwdStage);

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / 2, half = lane % 2;
    float* stage = stage_all + warp * L::kFwdStage;
    bf16* ps = ps_all + warp * 16 * kPLd;

    const int bh = blockIdx.x, b = bh / NH, h = bh % NH;
    const int qtile = static_cast<int>(gridDim.y) - 1 - static_cast<int>(blockIdx.y);
    const int q0 = qtile * kTile;
    const int C = NH * HS;
    const Heads<HS> heads(inp, b, T, NH, KV);
    const std::size_t rs = heads.rs;
    const bf16* base = heads.q(h);
    const bf16* qw = qs + warp * 16 * L::kLd;
    const int i = q0 + warp * 16 + r;  // this lane's query

    load_tile<HS>(qs, base, rs, q0, T);
    float m = -INFINITY, l = 0.0f;  // running max (log2 units) and sum of this lane's row
    float o[HS / 2];
#pragma unroll
    for (int x = 0; x < HS / 2; ++x) o[x] = 0.0f;

    for (int kt = 0; kt <= qtile; ++kt) {
        const int k0 = kt * kTile;
        __syncthreads();  // the previous K, V tiles are no longer read
        load_tile<HS>(ks, heads.k(h), rs, k0, T);
        load_tile<HS>(vs, heads.v(h), rs, k0, T);
        __syncthreads();
        // On the diagonal tile, warp w needs keys < 16 (w + 1) only.
        const int n_end = kt == qtile ? warp + 1 : kTile / 16;
        warp_abt<HS>(stage, qw, ks, 0, n_end);
        __syncwarp();
        float s[kTile / 2];
        float tile_max = -INFINITY;
#pragma unroll
        for (int x = 0; x < kTile / 2; ++x) {
            const int c = half + 2 * x, j = k0 + c;
            s[x] = (j <= i && i < T) ? stage[r * kSLd + c] * scale_log2 : -INFINITY;
            tile_max = fmaxf(tile_max, s[x]);
        }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, 1));
        const float m_new = fmaxf(m, tile_max);
        const float m_use =
            m_new == -INFINITY ? 0.0f : m_new;  // a fully masked row (i >= T) stays all zero
        const float alpha = exp2f(m - m_use);
        float psum = 0.0f;
#pragma unroll
        for (int x = 0; x < kTile / 2; ++x) {
            const float p = exp2f(s[x] - m_use);
            psum += p;
            ps[r * kPLd + half + 2 * x] = __float2bfloat16(p);
        }
        psum += __shfl_xor_sync(kFullMask, psum, 1);
        l = l * alpha + psum;
        m = m_new;
        __syncwarp();  // scores read, P written
        FragC pv[HS / 16];
        zero<HS>(pv);
        warp_ab_acc<HS>(pv, ps, vs, 0, n_end);
        store_acc<HS>(stage, pv);
        __syncwarp();
#pragma unroll
        for (int x = 0; x < HS / 2; ++x) o[x] = o[x] * alpha + stage[r * L::kOLd + half + 2 * x];
    }
    if (i < T) {
        const float inv = 1.0f / l;
        bf16* orow =
            out + (static_cast<std::size_t>(b) * T + i) * C + static_cast<std::size_t>(h) * HS;
#pragma unroll
        for (int x = 0; x < HS / 2; ++x) orow[half + 2 * x] = __float2bfloat16(o[x] * inv);
        if (half == 0) lse[static_cast<std::size_t>(bh) * T + i] = (m + log2f(l)) * kLn2;
    }
}

// delta[(b*NH + h)*T + i] = dO_i . O_i over the head's hs columns; one warp per row, fixed order.
template <int HS>
__global__ void attention_delta_kernel(float* __restrict__ delta, const bf16* __restrict__ dout,
                                       const bf16* __restrict__ out, std::size_t rows, int T,
                                       int NH) {
    const std::size_t row =
        static_cast<std::size_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;  // warp-uniform
    const int lane = threadIdx.x % 32;
    const int i = static_cast<int>(row % T);
    const std::size_t bh = row / T, b = bh / NH, h = bh % NH;
    const std::size_t off = (b * T + i) * static_cast<std::size_t>(NH * HS) + h * HS;
    float acc = 0.0f;
#pragma unroll
    for (int x = 0; x < HS / 32; ++x)
        acc += __bfloat162float(dout[off + lane + 32 * x]) *
               __bfloat162float(out[off + lane + 32 * x]);
    for (int sh = 16; sh > 0; sh >>= 1) acc += __shfl_xor_sync(kFullMask, acc, sh);
    if (lane == 0) delta[row] = acc;
}

// dQ. grid (B*NH, ceil(T/64)), the longest query tiles first. dq = scale * sum_j dS_ij k_j over
// keys j <= i, dS_ij = P_ij (dP_ij - delta_i), P_ij = exp(s_ij - lse_i), dP_ij = dO_i . v_j.
template <int HS>
__global__ void __launch_bounds__(kThreads)
    attention_dq_kernel(bf16* __restrict__ dinp, const bf16* __restrict__ dout,
                        const bf16* __restrict__ inp, const float* __restrict__ lse,
                        const float* __restrict__ delta, int T, int NH, int KV, float scale_log2,
                        float scale) {
    using L = Layout<HS>;
    extern __shared__ __align__(128) unsigned char smem[];
    bf16* ks = reinterpret_cast<bf16*>(smem);  // ks, vs: streamed; later the fp32 result
    bf16* vs = ks + kTile * L::kLd;
    bf16* qs = vs + kTile * L::kLd;  // qs, dos: this block's queries
    bf16* dos = qs + kTile * L::kLd;
    float* stage_all = reinterpret_cast<float*>(dos + kTile * L::kLd);
    bf16* ps_all = reinterpret_cast<bf16*>(stage_all + kWarps * 16 * kSLd);

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / 2, half = lane % 2;
    float* stage = stage_all + warp * 16 * kSLd;
    bf16* ps = ps_all + warp * 16 * kPLd;

    const int bh = blockIdx.x, b = bh / NH, h = bh % NH;
    const int qtile = static_cast<int>(gridDim.y) - 1 - static_cast<int>(blockIdx.y);
    const int q0 = qtile * kTile;
    const int C = NH * HS;
    const Heads<HS> heads(inp, b, T, NH, KV);
    const std::size_t rs = heads.rs;
    const bf16* base = heads.q(h);
    const bf16* dbase =
        dout + static_cast<std::size_t>(b) * T * C + static_cast<std::size_t>(h) * HS;
    const int i = q0 + warp * 16 + r;
    const float lse_i = i < T ? lse[static_cast<std::size_t>(bh) * T + i] * kLog2e : 0.0f;
    const float delta_i = i < T ? delta[static_cast<std::size_t>(bh) * T + i] : 0.0f;

    load_tile<HS>(qs, base, rs, q0, T);
    load_tile<HS>(dos, dbase, C, q0, T);
    FragC acc[HS / 16];
    zero<HS>(acc);

    for (int kt = 0; kt <= qtile; ++kt) {
        const int k0 = kt * kTile;
        __syncthreads();
        load_tile<HS>(ks, heads.k(h), rs, k0, T);
        load_tile<HS>(vs, heads.v(h), rs, k0, T);
        __syncthreads();
        const int n_end = kt == qtile ? warp + 1 : kTile / 16;
        warp_abt<HS>(stage, qs + warp * 16 * L::kLd, ks, 0, n_end);  // S
        __syncwarp();
        float p[kTile / 2];
#pragma unroll
        for (int x = 0; x < kTile / 2; ++x) {
            const int c = half + 2 * x, j = k0 + c;
            p[x] = (j <= i && i < T) ? exp2f(stage[r * kSLd + c] * scale_log2 - lse_i) : 0.0f;
        }
        __syncwarp();
        warp_abt<HS>(stage, dos + warp * 16 * L::kLd, vs, 0, n_end);  // dP
        __syncwarp();
#pragma unroll
        for (int x = 0; x < kTile / 2; ++x) {
            const int c = half + 2 * x, j = k0 + c;
            const float ds = (j <= i && i < T) ? p[x] * (stage[r * kSLd + c] - delta_i) : 0.0f;
            ps[r * kPLd + c] = __float2bfloat16(ds);
        }
        __syncwarp();
        warp_ab_acc<HS>(acc, ps, ks, 0, n_end);  // dQ += dS K
    }
    __syncthreads();  // ks, vs free: hold the fp32 result
    float* res = reinterpret_cast<float*>(ks) + warp * 16 * L::kOLd;
    store_acc<HS>(res, acc);
    __syncwarp();
    if (i < T) {
        bf16* dq =
            dinp + (static_cast<std::size_t>(b) * T + i) * rs + static_cast<std::size_t>(h) * HS;
#pragma unroll
        for (int x = 0; x < HS / 2; ++x)
            dq[half + 2 * x] = __float2bfloat16(res[r * L::kOLd + half + 2 * x] * scale);
    }
}

// dK, dV. grid (B*KV, ceil(T/64)), block y owns keys 64y..64y+63 of one KV head g (the longest
// loops have small y and start first). dv_j = sum_{h, i >= j} P_ij dO_i, dk_j = scale * sum_{h, i
// >= j} dS_ij q_i over the group's query heads h (in order) and their queries i; the warp computes
// the transposed tiles P^T = exp(K Q^T * scale - lse) and dP^T = V dO^T.
template <int HS>
__global__ void __launch_bounds__(kThreads)
    attention_dkdv_kernel(bf16* __restrict__ dinp, const bf16* __restrict__ dout,
                          const bf16* __restrict__ inp, const float* __restrict__ lse,
                          const float* __restrict__ delta, int T, int NH, int KV, float scale_log2,
                          float scale) {
    using L = Layout<HS>;
    extern __shared__ __align__(128) unsigned char smem[];
    bf16* ks = reinterpret_cast<bf16*>(smem);  // ks, vs: this block's keys; later the fp32 dK
    bf16* vs = ks + kTile * L::kLd;
    bf16* qs = vs + kTile * L::kLd;  // qs, dos: streamed; later the fp32 dV
    bf16* dos = qs + kTile * L::kLd;
    float* stage_all = reinterpret_cast<float*>(dos + kTile * L::kLd);
    bf16* ps_all = reinterpret_cast<bf16*>(stage_all + kWarps * 16 * kSLd);
    float* lse_s = reinterpret_cast<float*>(ps_all + kWarps * 16 * kPLd);  // log2 units
    float* delta_s = lse_s + kTile;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / 2, half = lane % 2;
    float* stage = stage_all + warp * 16 * kSLd;
    bf16* ps = ps_all + warp * 16 * kPLd;

    const int b = blockIdx.x / KV, g = blockIdx.x % KV, group = NH / KV;
    const int ktile = static_cast<int>(blockIdx.y);
    const int k0 = ktile * kTile;
    const int n_tiles = static_cast<int>(gridDim.y);
    const int C = NH * HS;
    const Heads<HS> heads(inp, b, T, NH, KV);
    const std::size_t rs = heads.rs;
    const int j = k0 + warp * 16 + r;  // this lane's key

    load_tile<HS>(ks, heads.k(g * group), rs, k0, T);
    load_tile<HS>(vs, heads.v(g * group), rs, k0, T);
    FragC dk[HS / 16], dv[HS / 16];
    zero<HS>(dk);
    zero<HS>(dv);

    for (int h = g * group; h < (g + 1) * group; ++h) {
        const std::size_t bh = static_cast<std::size_t>(b) * NH + h;
        const bf16* dbase =
            dout + static_cast<std::size_t>(b) * T * C + static_cast<std::size_t>(h) * HS;
        const float* lse_bh = lse + bh * T;
        const float* delta_bh = delta + bh * T;
        for (int qt = ktile; qt < n_tiles; ++qt) {
            const int q0 = qt * kTile;
            __syncthreads();
            load_tile<HS>(qs, heads.q(h), rs, q0, T);
            load_tile<HS>(dos, dbase, C, q0, T);
            if (threadIdx.x < kTile) {
                const int iq = q0 + static_cast<int>(threadIdx.x);
                lse_s[threadIdx.x] = iq < T ? lse_bh[iq] * kLog2e : 0.0f;
                delta_s[threadIdx.x] = iq < T ? delta_bh[iq] : 0.0f;
            }
            __syncthreads();
            // On the diagonal tile, warp w needs queries >= 16 w only.
            const int n_begin = qt == ktile ? warp : 0;
            warp_abt<HS>(stage, ks + warp * 16 * L::kLd, qs, n_begin, kTile / 16);  // S^T
            __syncwarp();
            float p[kTile / 2];
#pragma unroll
            for (int x = 0; x < kTile / 2; ++x) {
                const int c = half + 2 * x, iq = q0 + c;
                p[x] =
                    (iq >= j && iq < T) ? exp2f(stage[r * kSLd + c] * scale_log2 - lse_s[c]) : 0.0f;
                ps[r * kPLd + c] = __float2bfloat16(p[x]);
            }
            __syncwarp();
            warp_ab_acc<HS>(dv, ps, dos, n_begin, kTile / 16);                       // dV += P^T dO
            warp_abt<HS>(stage, vs + warp * 16 * L::kLd, dos, n_begin, kTile / 16);  // dP^T
            __syncwarp();  // also: every lane is done reading P from ps
#pragma unroll
            for (int x = 0; x < kTile / 2; ++x) {
                const int c = half + 2 * x, iq = q0 + c;
                const float ds =
                    (iq >= j && iq < T) ? p[x] * (stage[r * kSLd + c] - delta_s[c]) : 0.0f;
                ps[r * kPLd + c] = __float2bfloat16(ds);
            }
            __syncwarp();
            warp_ab_acc<HS>(dk, ps, qs, n_begin, kTile / 16);  // dK += dS^T Q
        }
    }
    __syncthreads();  // all tiles free: dK goes where K, V were, dV where Q, dO were
    float* res_k = reinterpret_cast<float*>(ks) + warp * 16 * L::kOLd;
    float* res_v = reinterpret_cast<float*>(qs) + warp * 16 * L::kOLd;
    store_acc<HS>(res_k, dk);
    store_acc<HS>(res_v, dv);
    __syncwarp();
    if (j < T) {
        bf16* row = dinp + (static_cast<std::size_t>(b) * T + j) * rs;
        bf16* dk_row = row + (heads.k(g * group) - heads.q(0));
        bf16* dv_row = row + (heads.v(g * group) - heads.q(0));
#pragma unroll
        for (int x = 0; x < HS / 2; ++x) {
            const int d = half + 2 * x;
            dk_row[d] = __float2bfloat16(res_k[r * L::kOLd + d] * scale);
            dv_row[d] = __float2bfloat16(res_v[r * L::kOLd + d]);
        }
    }
}

// Opts the kernel in to `bytes` of dynamic shared memory, or says why this device cannot run it.
template <class Kernel>
void prepare(Kernel kernel, int bytes, const char* name) {
    int device = 0, optin = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
          "cudaDeviceGetAttribute");
    if (bytes > optin)
        throw Error(std::string("attention (fused): ") + name + " needs " + std::to_string(bytes) +
                    " bytes of shared memory per block, this device allows " +
                    std::to_string(optin));
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
          "cudaFuncSetAttribute(attention)");
}

dim3 tile_grid(int B, int T, int NH) {
    const long long bh = static_cast<long long>(B) * NH, tiles = (T + kTile - 1) / kTile;
    if (bh > 0x7fffffffLL || tiles > 65535)
        throw Error(
            "attention (fused): B*NH = " + std::to_string(bh) + ", T = " + std::to_string(T) +
            " exceed the launch grid (B*NH < 2^31, T <= " + std::to_string(65535 * kTile) + ")");
    return dim3(static_cast<unsigned>(bh), static_cast<unsigned>(tiles));
}

float head_scale(int hs) {
    return 1.0f / std::sqrt(static_cast<float>(hs));
}

template <int HS>
void forward(bf16* out, float* lse, const bf16* inp, int B, int T, int NH, int KV,
             cudaStream_t stream) {
    constexpr int bytes = Layout<HS>::kForward;
    prepare(attention_forward_kernel<HS>, bytes, "attention_forward_kernel");
    attention_forward_kernel<HS><<<tile_grid(B, T, NH), kThreads, bytes, stream>>>(
        out, lse, inp, T, NH, KV, head_scale(HS) * kLog2e);
    check_launch("attention_forward_kernel");
}

template <int HS>
void backward(bf16* dinp, float* delta, const bf16* dout, const bf16* inp, const bf16* out,
              const float* lse, int B, int T, int NH, int KV, cudaStream_t stream) {
    const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
    constexpr int kDeltaThreads = 256;
    const std::size_t delta_blocks = (rows + kDeltaThreads / 32 - 1) / (kDeltaThreads / 32);
    if (delta_blocks > 0x7fffffffu) throw Error("attention (fused): too many rows for one launch");
    attention_delta_kernel<HS><<<static_cast<unsigned>(delta_blocks), kDeltaThreads, 0, stream>>>(
        delta, dout, out, rows, T, NH);
    check_launch("attention_delta_kernel");

    constexpr int bytes = Layout<HS>::kBackward;
    const float scale = head_scale(HS);
    prepare(attention_dq_kernel<HS>, bytes, "attention_dq_kernel");
    attention_dq_kernel<HS><<<tile_grid(B, T, NH), kThreads, bytes, stream>>>(
        dinp, dout, inp, lse, delta, T, NH, KV, scale * kLog2e, scale);
    check_launch("attention_dq_kernel");
    prepare(attention_dkdv_kernel<HS>, bytes, "attention_dkdv_kernel");
    attention_dkdv_kernel<HS><<<tile_grid(B, T, KV), kThreads, bytes, stream>>>(
        dinp, dout, inp, lse, delta, T, NH, KV, scale * kLog2e, scale);
    check_launch("attention_dkdv_kernel");
}

}  // namespace

void attention_fused_forward(bf16* out, float* lse, const bf16* inp, int B, int T, int C, int NH,
                             int KV, cudaStream_t stream) {
    switch (C / NH) {
        case 32:
            return forward<32>(out, lse, inp, B, T, NH, KV, stream);
        case 64:
            return forward<64>(out, lse, inp, B, T, NH, KV, stream);
        case 128:
            return forward<128>(out, lse, inp, B, T, NH, KV, stream);
        default:
            throw Error("attention (fused): head size " + std::to_string(C / NH) +
                        " is not 32, 64 or 128");
    }
}

void attention_fused_backward(bf16* dinp, float* delta, const bf16* dout, const bf16* inp,
                              const bf16* out, const float* lse, int B, int T, int C, int NH,
                              int KV, cudaStream_t stream) {
    switch (C / NH) {
        case 32:
            return backward<32>(dinp, delta, dout, inp, out, lse, B, T, NH, KV, stream);
        case 64:
            return backward<64>(dinp, delta, dout, inp, out, lse, B, T, NH, KV, stream);
        case 128:
            return backward<128>(dinp, delta, dout, inp, out, lse, B, T, NH, KV, stream);
        default:
            throw Error("attention (fused): head size " + std::to_string(C / NH) +
                        " is not 32, 64 or 128");
    }
}

}  // namespace arch::cuda::detail
