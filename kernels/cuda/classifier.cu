// kernels/cuda/classifier.cu: fused softmax + cross-entropy over the real V of a padded vocab Vp.
// Shapes: logits (N, Vp) bf16, targets and losses (N). One block per row: one read computes the
// row's max and sum of exp (online, per thread, then a fixed-order block reduction); the loss is
// log(sum) - (logit[target] - max); with write_dlogits a second read overwrites the row in place
// with (softmax - onehot(target)) * dloss, and 0 in the padded columns. No (N, Vp) probability
// buffer. An out-of-range target gives a NaN loss (and no onehot term) instead of a wild read.
#include <string>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

// (max, sum of exp(x - max)) of two parts; an empty part has max -inf and sum 0.
struct MaxSum {
    float max;
    float sum;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.max, b.max);
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.sum * __expf(a.max - m) + b.sum * __expf(b.max - m)};
}

__device__ __forceinline__ MaxSum add_value(MaxSum s, float x) {
    if (x > s.max) return {x, s.sum * __expf(s.max - x) + 1.0f};
    return {s.max, s.sum + __expf(x - s.max)};
}

// Thread t reads columns [j, j + VEC) for j = t * VEC, t * VEC + kThreads * VEC, ... (below V).
template <int VEC>
__global__ void __launch_bounds__(kThreads)
    classifier_kernel(bf16* logits, float* __restrict__ losses, const int* __restrict__ targets,
                      float dloss, int V, int Vp, bool write_dlogits) {
    __shared__ MaxSum warp_parts[kWarps];
    __shared__ MaxSum row_part;
    bf16* row = logits + static_cast<std::size_t>(blockIdx.x) * Vp;
    const int target = targets[blockIdx.x];
    const bool valid_target = target >= 0 && target < V;
    // Read before any thread of this block may overwrite the row (the barrier below orders it).
    const float target_logit = threadIdx.x == 0 && valid_target ? bf16_to_float(row[target]) : 0.0f;

    MaxSum part{-INFINITY, 0.0f};
    for (int j = threadIdx.x * VEC; j < V; j += kThreads * VEC) {
        float x[VEC];
        load_bf16<VEC>(x, row + j);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
            if (j + k < V) part = add_value(part, x[k]);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        MaxSum other;
        other.max = __shfl_xor_sync(0xffffffffu, part.max, o);
        other.sum = __shfl_xor_sync(0xffffffffu, part.sum, o);
        part = combine(part, other);
    }
    if (threadIdx.x % 32 == 0) warp_parts[threadIdx.x / 32] = part;
    __syncthreads();
    if (threadIdx.x == 0) {
        MaxSum total = warp_parts[0];
        for (int w = 1; w < kWarps; ++w) total = combine(total, warp_parts[w]);
        row_part = total;
        losses[blockIdx.x] = valid_target ? logf(total.sum) - (target_logit - total.max) : NAN;
    }
    __syncthreads();
    if (!write_dlogits) return;

    const float m = row_part.max;
    const float scale = dloss / row_part.sum;
    for (int j = threadIdx.x * VEC; j < Vp; j += kThreads * VEC) {
        float x[VEC];
        load_bf16<VEC>(x, row + j);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
            const int col = j + k;
            x[k] = col < V ? __expf(x[k] - m) * scale - (col == target ? dloss : 0.0f) : 0.0f;
        }
        store_bf16<VEC>(row + j, x);
    }
}

}  // namespace

void classifier_forward_backward(bf16* logits, float* losses, const int* targets, float dloss,
                                 int N, int V, int Vp, bool write_dlogits, cudaStream_t stream) {
    if (N <= 0 || V <= 0 || Vp < V) {
        throw Error("classifier_forward_backward: need N > 0 and 0 < V <= Vp, got N=" +
                    std::to_string(N) + " V=" + std::to_string(V) + " Vp=" + std::to_string(Vp));
    }
    if (Vp % 8 == 0 && aligned16(logits)) {
        classifier_kernel<8>
            <<<N, kThreads, 0, stream>>>(logits, losses, targets, dloss, V, Vp, write_dlogits);
    } else {
        classifier_kernel<1>
            <<<N, kThreads, 0, stream>>>(logits, losses, targets, dloss, V, Vp, write_dlogits);
    }
    check_launch("classifier_kernel");
}

}  // namespace arch::cuda
