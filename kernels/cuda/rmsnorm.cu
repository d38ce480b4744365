// kernels/cuda/rmsnorm.cu: RMSNorm (the Llama family's norm) forward (plain, and with the residual
// add fused in front) and backward; bf16 activations, fp32 rstd and weight gradient. Shapes: inp,
// out, a, b, residual, dout, dinp (N, C); weight (C) bf16; rstd (N) fp32; dweight (C) fp32. Forward
// and the input gradient: one warp per row, 8 channels per 128-bit load when C % 8 == 0 and the
// pointers are 16-byte aligned, one at a time otherwise. The weight gradient is a column sum of
// dy x rstd: per-chunk partials (warps in order) in scratch, then a fixed-order second pass. No
// atomics: the same bits on every rerun. Backward accumulates (+=) into dinp and dweight.
#include <algorithm>
#include <string>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kRowWarps = 8;  // rows per block in the row kernels
constexpr int kSumWarps = 8;  // warps per block of the weight-gradient partials
constexpr int kMaxChunks = 128;
constexpr int kMinRowsPerChunk = 64;

int chunks_for(int N) {
    return std::clamp((N + kMinRowsPerChunk - 1) / kMinRowsPerChunk, 1, kMaxChunks);
}

// RESIDUAL: residual = bf16(a + b), then out = rmsnorm(residual); else out = rmsnorm(a). x may be
// the residual this warp has just written (same lanes, same addresses), so no __restrict__.
template <int VEC, bool RESIDUAL>
__global__ void __launch_bounds__(kRowWarps * 32)
    rmsnorm_forward_kernel(bf16* residual, bf16* __restrict__ out, float* __restrict__ rstd,
                           const bf16* a, const bf16* b, const bf16* __restrict__ weight, float eps,
                           int N, int C) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kRowWarps + threadIdx.x / 32;
    if (row >= N) return;  // whole warps leave; no block-wide barrier follows
    const std::size_t off = static_cast<std::size_t>(row) * C;
    const bf16* x = a + off;
    if constexpr (RESIDUAL) {
        add_row_bf16<VEC>(residual + off, a + off, b + off, C, lane);
        x = residual + off;
    }
    float ss = 0.0f;
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float v[VEC];
        load_bf16<VEC>(v, x + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) ss += v[k] * v[k];
    }
    const float s = 1.0f / sqrtf(warp_sum(ss) / C + eps);
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float v[VEC], w[VEC];
        load_bf16<VEC>(v, x + c);
        load_bf16<VEC>(w, weight + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[k] = v[k] * s * w[k];
        store_bf16<VEC>(out + off + c, v);
    }
    if (lane == 0) rstd[row] = s;
}

// dx += s w dy - s³ x mean(w dy x), one warp per row.
template <int VEC>
__global__ void __launch_bounds__(kRowWarps * 32)
    rmsnorm_dinp_kernel(bf16* dinp, const bf16* __restrict__ dout, const bf16* __restrict__ inp,
                        const bf16* __restrict__ weight, const float* __restrict__ rstd, int N,
                        int C) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kRowWarps + threadIdx.x / 32;
    if (row >= N) return;
    const std::size_t off = static_cast<std::size_t>(row) * C;
    const float s = rstd[row];
    float dot = 0.0f;
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float dy[VEC], x[VEC], w[VEC];
        load_bf16<VEC>(dy, dout + off + c);
        load_bf16<VEC>(x, inp + off + c);
        load_bf16<VEC>(w, weight + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) dot += w[k] * dy[k] * x[k];
    }
    const float k3 = s * s * s * warp_sum(dot) / C;
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float dy[VEC], x[VEC], w[VEC], dx[VEC];
        load_bf16<VEC>(dy, dout + off + c);
        load_bf16<VEC>(x, inp + off + c);
        load_bf16<VEC>(w, weight + c);
        load_bf16<VEC>(dx, dinp + off + c);
#pragma unroll
        for (int k = 0; k < VEC; ++k) dx[k] += s * w[k] * dy[k] - k3 * x[k];
        store_bf16<VEC>(dinp + off + c, dx);
    }
}

// partials[chunk][c] = sum over the chunk's rows r of dy[r,c] x[r,c] rstd[r]. Block (32,
// kSumWarps): columns [blockIdx.x * 32 * VEC, +32 * VEC), chunk blockIdx.y; warp y takes rows y, y
// + kSumWarps,
// ... in order, then the warps' sums are added in order y = 0..kSumWarps-1.
template <int VEC>
__global__ void __launch_bounds__(32 * kSumWarps)
    rmsnorm_dweight_partials_kernel(float* __restrict__ partials, const bf16* __restrict__ dout,
                                    const bf16* __restrict__ inp, const float* __restrict__ rstd,
                                    int N, int C, int rows_per_chunk) {
    __shared__ float sums[kSumWarps][32 * VEC];
    const int c = (blockIdx.x * 32 + threadIdx.x) * VEC;
    const int row_begin = blockIdx.y * rows_per_chunk;
    const int row_end = min(N, row_begin + rows_per_chunk);
    float acc[VEC] = {};
    if (c < C) {
        for (int r = row_begin + threadIdx.y; r < row_end; r += kSumWarps) {
            float dy[VEC], x[VEC];
            load_bf16<VEC>(dy, dout + static_cast<std::size_t>(r) * C + c);
            load_bf16<VEC>(x, inp + static_cast<std::size_t>(r) * C + c);
            const float s = rstd[r];
#pragma unroll
            for (int k = 0; k < VEC; ++k) acc[k] += dy[k] * x[k] * s;
        }
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) sums[threadIdx.y][threadIdx.x * VEC + k] = acc[k];
    __syncthreads();
    for (int i = threadIdx.y * 32 + threadIdx.x; i < 32 * VEC; i += 32 * kSumWarps) {
        const int col = blockIdx.x * 32 * VEC + i;
        if (col >= C) continue;
        float total = 0.0f;
#pragma unroll
        for (int w = 0; w < kSumWarps; ++w) total += sums[w][i];
        partials[static_cast<std::size_t>(blockIdx.y) * C + col] = total;
    }
}

void check_shape(const char* op, int N, int C) {
    if (N <= 0 || C <= 0)
        throw Error(std::string(op) + ": N and C must be positive, got N=" + std::to_string(N) +
                    " C=" + std::to_string(C));
}

unsigned row_blocks(int N) {
    return static_cast<unsigned>((N + kRowWarps - 1) / kRowWarps);
}

}  // namespace

void rmsnorm_forward(bf16* out, float* rstd, const bf16* inp, const bf16* weight, float eps, int N,
                     int C, cudaStream_t stream) {
    check_shape("rmsnorm_forward", N, C);
    if (C % 8 == 0 && aligned16(out) && aligned16(inp) && aligned16(weight)) {
        rmsnorm_forward_kernel<8, false><<<row_blocks(N), kRowWarps * 32, 0, stream>>>(
            nullptr, out, rstd, inp, nullptr, weight, eps, N, C);
    } else {
        rmsnorm_forward_kernel<1, false><<<row_blocks(N), kRowWarps * 32, 0, stream>>>(
            nullptr, out, rstd, inp, nullptr, weight, eps, N, C);
    }
    check_launch("rmsnorm_forward_kernel");
}

void residual_rmsnorm_forward(bf16* residual, bf16* out, float* rstd, const bf16* a, const bf16* b,
                              const bf16* weight, float eps, int N, int C, cudaStream_t stream) {
    check_shape("residual_rmsnorm_forward", N, C);
    if (C % 8 == 0 && aligned16(residual) && aligned16(out) && aligned16(a) && aligned16(b) &&
        aligned16(weight)) {
        rmsnorm_forward_kernel<8, true><<<row_blocks(N), kRowWarps * 32, 0, stream>>>(
            residual, out, rstd, a, b, weight, eps, N, C);
    } else {
        rmsnorm_forward_kernel<1, true><<<row_blocks(N), kRowWarps * 32, 0, stream>>>(
            residual, out, rstd, a, b, weight, eps, N, C);
    }
    check_launch("residual_rmsnorm_forward_kernel");
}

std::size_t rmsnorm_backward_scratch_floats(int N, int C) {
    if (N <= 0 || C <= 0) return 0;
    return static_cast<std::size_t>(chunks_for(N)) * C;
}

void rmsnorm_backward(bf16* dinp, float* dweight, float* scratch, const bf16* dout, const bf16* inp,
                      const bf16* weight, const float* rstd, int N, int C, cudaStream_t stream) {
    check_shape("rmsnorm_backward", N, C);
    const bool vec =
        C % 8 == 0 && aligned16(dinp) && aligned16(dout) && aligned16(inp) && aligned16(weight);
    if (vec) {
        rmsnorm_dinp_kernel<8>
            <<<row_blocks(N), kRowWarps * 32, 0, stream>>>(dinp, dout, inp, weight, rstd, N, C);
    } else {
        rmsnorm_dinp_kernel<1>
            <<<row_blocks(N), kRowWarps * 32, 0, stream>>>(dinp, dout, inp, weight, rstd, N, C);
    }
    check_launch("rmsnorm_dinp_kernel");
    const int P = chunks_for(N);
    const int rows_per_chunk = (N + P - 1) / P;
    const dim3 block(32, kSumWarps);
    if (vec) {
        const dim3 grid((C / 8 + 31) / 32, P);
        rmsnorm_dweight_partials_kernel<8>
            <<<grid, block, 0, stream>>>(scratch, dout, inp, rstd, N, C, rows_per_chunk);
    } else {
        const dim3 grid((C + 31) / 32, P);
        rmsnorm_dweight_partials_kernel<1>
            <<<grid, block, 0, stream>>>(scratch, dout, inp, rstd, N, C, rows_per_chunk);
    }
    check_launch("rmsnorm_dweight_partials_kernel");
    launch_sum_partials(dweight, scratch, P, C, C, stream);
}

}  // namespace arch::cuda
