// kernels/cuda/bias.cu: the bias gradient of a linear layer, dbias (OC, fp32) += column sums of
// dout (N, OC, bf16). Deterministic: grid (column tiles, P row chunks); in a block, 8 warps take
// interleaved rows of the chunk, each lane sums its columns in row order, the 8 warp sums are added
// in order into partials[p][c] (scratch), then a second pass adds partials p = 0..P-1 in fixed
// order. 8 columns per lane with 128-bit loads when OC % 8 == 0 and dout is 16-byte aligned, else
// one.
#include <algorithm>
#include <string>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kWarps = 8;
constexpr int kMaxChunks = 128;  // P, the number of partial rows
constexpr int kMinRowsPerChunk = 64;

int chunks_for(int N) {
    return std::clamp((N + kMinRowsPerChunk - 1) / kMinRowsPerChunk, 1, kMaxChunks);
}

// Block (32, kWarps): columns [blockIdx.x * 32 * VEC, +32 * VEC), rows of chunk blockIdx.y.
template <int VEC>
__global__ void __launch_bounds__(32 * kWarps)
    bias_partials_kernel(float* __restrict__ partials, const bf16* __restrict__ dout, int N, int OC,
                         int rows_per_chunk) {
    __shared__ float sums[kWarps][32 * VEC];
    const int c = (blockIdx.x * 32 + threadIdx.x) * VEC;
    const int row_begin = blockIdx.y * rows_per_chunk;
    const int row_end = min(N, row_begin + rows_per_chunk);
    float acc[VEC] = {};
    if (c < OC) {
        for (int r = row_begin + threadIdx.y; r < row_end; r += kWarps) {
            float d[VEC];
            load_bf16<VEC>(d, dout + static_cast<std::size_t>(r) * OC + c);
#pragma unroll
            for (int k = 0; k < VEC; ++k) acc[k] += d[k];
        }
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) sums[threadIdx.y][threadIdx.x * VEC + k] = acc[k];
    __syncthreads();
    // The block's 32 * VEC columns, each summed over the warps in order by one thread.
    for (int i = threadIdx.y * 32 + threadIdx.x; i < 32 * VEC; i += 32 * kWarps) {
        const int col = blockIdx.x * 32 * VEC + i;
        if (col >= OC) continue;
        float total = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) total += sums[w][i];
        partials[static_cast<std::size_t>(blockIdx.y) * OC + col] = total;
    }
}

}  // namespace

std::size_t bias_backward_scratch_floats(int N, int OC) {
    if (N <= 0 || OC <= 0) return 0;
    return static_cast<std::size_t>(chunks_for(N)) * OC;
}

void bias_backward(float* dbias, float* scratch, const bf16* dout, int N, int OC,
                   cudaStream_t stream) {
    if (N <= 0 || OC <= 0) {
        throw Error("bias_backward: N and OC must be positive, got N=" + std::to_string(N) +
                    " OC=" + std::to_string(OC));
    }
    const int P = chunks_for(N);
    const int rows_per_chunk = (N + P - 1) / P;
    const dim3 block(32, kWarps);
    if (OC % 8 == 0 && aligned16(dout)) {
        const dim3 grid((OC / 8 + 31) / 32, P);
        bias_partials_kernel<8><<<grid, block, 0, stream>>>(scratch, dout, N, OC, rows_per_chunk);
    } else {
        const dim3 grid((OC + 31) / 32, P);
        bias_partials_kernel<1><<<grid, block, 0, stream>>>(scratch, dout, N, OC, rows_per_chunk);
    }
    check_launch("bias_partials_kernel");
    launch_sum_partials(dbias, scratch, P, OC, OC, stream);
}

}  // namespace arch::cuda
