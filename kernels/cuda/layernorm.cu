// kernels/cuda/layernorm.cu: LayerNorm forward (plain, and with the residual add fused in front)
// and backward, bf16 activations, fp32 statistics and parameter gradients, eps 1e-5. Shapes: inp,
// out, a, b, residual, dout, dinp (N, C); weight, bias (C) bf16; mean, rstd (N) fp32; dweight,
// dbias (C) fp32. One warp per row; 8 channels per 128-bit load when C % 8 == 0 and the pointers
// are 16-byte aligned, one at a time otherwise. Backward accumulates (+=) everywhere; its parameter
// gradients go through per-block partials in scratch and a fixed-order second pass.
#include <algorithm>
#include <string>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr float kEps = 1e-5f;
constexpr int kForwardWarps = 8;         // rows per forward block
constexpr int kBackwardMaxWarps = 8;     // warps per backward block, fewer when C is large
constexpr int kBackwardMaxBlocks = 512;  // partial sums per parameter gradient
constexpr int kDefaultSharedBytes = 48 * 1024;

// Mean and rstd of row x, (x - mean) * rstd * weight + bias into y; lane 0 stores the statistics.
// x may be the residual this warp has just written (same lanes, same addresses), so no
// __restrict__.
template <int VEC>
__device__ void normalize_row(bf16* y, float* mean, float* rstd, const bf16* x,
                              const bf16* __restrict__ weight, const bf16* __restrict__ bias,
                              int row, int C, int lane) {
    float sum = 0.0f;
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float v[VEC];
        load_bf16<VEC>(v, x + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) sum += v[k];
    }
    const float m = warp_sum(sum) / C;
    float sq = 0.0f;
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float v[VEC];
        load_bf16<VEC>(v, x + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) sq += (v[k] - m) * (v[k] - m);
    }
    const float s = 1.0f / sqrtf(warp_sum(sq) / C + kEps);
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float v[VEC], w[VEC], b[VEC];
        load_bf16<VEC>(v, x + c);
        load_bf16<VEC>(w, weight + c);
        load_bf16<VEC>(b, bias + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[k] = (v[k] - m) * s * w[k] + b[k];
        store_bf16<VEC>(y + c, v);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}

// RESIDUAL: residual = bf16(a + b), then out = layernorm(residual); else out = layernorm(a).
template <int VEC, bool RESIDUAL>
__global__ void __launch_bounds__(kForwardWarps * 32)
    layernorm_forward_kernel(bf16* residual, bf16* __restrict__ out, float* __restrict__ mean,
                             float* __restrict__ rstd, const bf16* a, const bf16* b,
                             const bf16* __restrict__ weight, const bf16* __restrict__ bias, int N,
                             int C) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kForwardWarps + threadIdx.x / 32;
    if (row >= N) return;  // whole warps leave; no block-wide barrier follows
    const std::size_t off = static_cast<std::size_t>(row) * C;
    const bf16* x = a + off;
    if constexpr (RESIDUAL) {
        add_row_bf16<VEC>(residual + off, a + off, b + off, C, lane);
        x = residual + off;
    }
    normalize_row<VEC>(out + off, mean, rstd, x, weight, bias, row, C, lane);
}

// Slot of channel c in a warp's shared accumulator: the lane that owns c (c in its group g = c /
// VEC, lane = g % 32) keeps its VEC values 32 floats apart, so a warp's accesses hit 32 distinct
// banks.
__device__ __forceinline__ int acc_slot(int c, int vec) {
    const int g = c / vec, j = c % vec;
    return ((g / 32) * vec + j) * 32 + g % 32;
}

// Rows [blockIdx.x * rows_per_block, +rows_per_block), warp w takes rows w, w + warps, ...
// dinp += the input gradient row by row. Each warp accumulates dweight, dbias of its rows in its
// own shared slice (lane-owned slots, no races); at the end the block adds the warps' slices in
// order w = 0..warps-1 and writes its partial row partials[blockIdx.x] = (dweight[C], dbias[C]).
template <int VEC>
__global__ void layernorm_backward_kernel(bf16* dinp, float* __restrict__ partials,
                                          const bf16* dout, const bf16* __restrict__ inp,
                                          const bf16* __restrict__ weight,
                                          const float* __restrict__ mean,
                                          const float* __restrict__ rstd, int N, int C, int c_pad,
                                          int rows_per_block) {
    extern __shared__ float acc[];  // [warps][2][c_pad]
    const int warps = blockDim.x / 32;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float* dw = acc + static_cast<std::size_t>(warp) * 2 * c_pad;
    float* db = dw + c_pad;
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) dw[acc_slot(c + k, VEC)] = db[acc_slot(c + k, VEC)] = 0.0f;
    }
    const int row_begin = blockIdx.x * rows_per_block;
    const int row_end = min(N, row_begin + rows_per_block);
    for (int row = row_begin + warp; row < row_end; row += warps) {
        const std::size_t off = static_cast<std::size_t>(row) * C;
        const float m = mean[row], s = rstd[row];
        float sum_dnorm = 0.0f, sum_dnorm_norm = 0.0f;
        for (int c = lane * VEC; c < C; c += 32 * VEC) {
            float dy[VEC], x[VEC], w[VEC];
            load_bf16<VEC>(dy, dout + off + c);
            load_bf16<VEC>(x, inp + off + c);
            load_bf16<VEC>(w, weight + c);
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float norm = (x[k] - m) * s;
                const float dnorm = w[k] * dy[k];
                sum_dnorm += dnorm;
                sum_dnorm_norm += dnorm * norm;
                const int slot = acc_slot(c + k, VEC);
                dw[slot] += norm * dy[k];
                db[slot] += dy[k];
            }
        }
        const float dnorm_mean = warp_sum(sum_dnorm) / C;
        const float dnorm_norm_mean = warp_sum(sum_dnorm_norm) / C;
        for (int c = lane * VEC; c < C; c += 32 * VEC) {
            float dy[VEC], x[VEC], w[VEC], dx[VEC];
            load_bf16<VEC>(dy, dout + off + c);
            load_bf16<VEC>(x, inp + off + c);
            load_bf16<VEC>(w, weight + c);
            load_bf16<VEC>(dx, dinp + off + c);
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float norm = (x[k] - m) * s;
                dx[k] += (w[k] * dy[k] - dnorm_mean - norm * dnorm_norm_mean) * s;
            }
            store_bf16<VEC>(dinp + off + c, dx);
        }
    }
    __syncthreads();
    float* out = partials + static_cast<std::size_t>(blockIdx.x) * 2 * C;
    for (int i = threadIdx.x; i < 2 * C; i += blockDim.x) {
        const int which = i / C, slot = acc_slot(i % C, VEC);
        float total = 0.0f;
        for (int w = 0; w < warps; ++w)
            total += acc[(static_cast<std::size_t>(w) * 2 + which) * c_pad + slot];
        out[i] = total;
    }
}

void check_shape(const char* op, int N, int C) {
    if (N <= 0 || C <= 0) {
        throw Error(std::string(op) + ": N and C must be positive, got N=" + std::to_string(N) +
                    " C=" + std::to_string(C));
    }
}

// Backward geometry, a function of (N, C) only (so scratch sizes and reduction order are fixed).
struct BackwardShape {
    int c_pad;           // C rounded up to whole groups of 32 lanes x 8 channels
    int warps;           // per block
    int blocks;          // partial rows
    int rows_per_block;  // last block may hold fewer
    std::size_t shared_bytes;
};

BackwardShape backward_shape(int N, int C) {
    BackwardShape g{};
    g.c_pad = (C + 255) / 256 * 256;
    const std::size_t warp_bytes = 2 * static_cast<std::size_t>(g.c_pad) * sizeof(float);
    g.warps = static_cast<int>(
        std::clamp<std::size_t>(kDefaultSharedBytes / warp_bytes, 1, kBackwardMaxWarps));
    const int max_blocks = std::min((N + g.warps - 1) / g.warps, kBackwardMaxBlocks);
    g.rows_per_block = (N + max_blocks - 1) / max_blocks;
    g.blocks = (N + g.rows_per_block - 1) / g.rows_per_block;
    g.shared_bytes = warp_bytes * g.warps;
    return g;
}

}  // namespace

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight,
                       const bf16* bias, int N, int C, cudaStream_t stream) {
    check_shape("layernorm_forward", N, C);
    const unsigned grid = static_cast<unsigned>((N + kForwardWarps - 1) / kForwardWarps);
    if (C % 8 == 0 && aligned16(out) && aligned16(inp) && aligned16(weight) && aligned16(bias)) {
        layernorm_forward_kernel<8, false><<<grid, kForwardWarps * 32, 0, stream>>>(
            nullptr, out, mean, rstd, inp, nullptr, weight, bias, N, C);
    } else {
        layernorm_forward_kernel<1, false><<<grid, kForwardWarps * 32, 0, stream>>>(
            nullptr, out, mean, rstd, inp, nullptr, weight, bias, N, C);
    }
    check_launch("layernorm_forward_kernel");
}

void residual_layernorm_forward(bf16* residual, bf16* out, float* mean, float* rstd, const bf16* a,
                                const bf16* b, const bf16* weight, const bf16* bias, int N, int C,
                                cudaStream_t stream) {
    check_shape("residual_layernorm_forward", N, C);
    const unsigned grid = static_cast<unsigned>((N + kForwardWarps - 1) / kForwardWarps);
    if (C % 8 == 0 && aligned16(residual) && aligned16(out) && aligned16(a) && aligned16(b) &&
        aligned16(weight) && aligned16(bias)) {
        layernorm_forward_kernel<8, true><<<grid, kForwardWarps * 32, 0, stream>>>(
            residual, out, mean, rstd, a, b, weight, bias, N, C);
    } else {
        layernorm_forward_kernel<1, true><<<grid, kForwardWarps * 32, 0, stream>>>(
            residual, out, mean, rstd, a, b, weight, bias, N, C);
    }
    check_launch("residual_layernorm_forward_kernel");
}

std::size_t layernorm_backward_scratch_floats(int N, int C) {
    if (N <= 0 || C <= 0) return 0;
    return static_cast<std::size_t>(backward_shape(N, C).blocks) * 2 * C;
}

void layernorm_backward(bf16* dinp, float* dweight, float* dbias, float* scratch, const bf16* dout,
                        const bf16* inp, const bf16* weight, const float* mean, const float* rstd,
                        int N, int C, cudaStream_t stream) {
    check_shape("layernorm_backward", N, C);
    const BackwardShape g = backward_shape(N, C);
    const bool vec =
        C % 8 == 0 && aligned16(dinp) && aligned16(dout) && aligned16(inp) && aligned16(weight);
    auto kernel = vec ? layernorm_backward_kernel<8> : layernorm_backward_kernel<1>;
    if (g.shared_bytes > static_cast<std::size_t>(kDefaultSharedBytes)) {
        int device = 0, optin = 0;
        check(cudaGetDevice(&device), "cudaGetDevice");
        check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
              "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
        if (g.shared_bytes > static_cast<std::size_t>(optin)) {
            throw Error("layernorm_backward: C=" + std::to_string(C) + " needs " +
                        std::to_string(g.shared_bytes) +
                        " bytes of shared memory per block, this GPU allows " +
                        std::to_string(optin));
        }
        check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(g.shared_bytes)),
              "cudaFuncSetAttribute(layernorm_backward_kernel)");
    }
    kernel<<<g.blocks, g.warps * 32, g.shared_bytes, stream>>>(
        dinp, scratch, dout, inp, weight, mean, rstd, N, C, g.c_pad, g.rows_per_block);
    check_launch("layernorm_backward_kernel");
    launch_sum_partials(dweight, scratch, g.blocks, C, 2 * C, stream);
    launch_sum_partials(dbias, scratch + C, g.blocks, C, 2 * C, stream);
}

}  // namespace arch::cuda
