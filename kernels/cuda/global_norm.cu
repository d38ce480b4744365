// kernels/cuda/global_norm.cu: the sum of squares of an fp32 buffer (global-norm gradient
// clipping). Deterministic: always kSumSquaresPartials blocks of kThreads threads with grid-stride
// loops, each thread accumulating x*x in double in index order, a fixed butterfly/warp-order
// reduction per block into partials[block], then one block adds the partials in a fixed order.
// Synchronises the stream.
#include <string>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// The block's threads' values summed in a fixed order (warp butterflies, then warps 0..kWarps-1);
// the result is valid in thread 0.
__device__ double block_sum(double v) {
    __shared__ double warp_sums[kWarps];
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    double total = 0.0;
    if (threadIdx.x == 0) {
        for (int w = 0; w < kWarps; ++w) total += warp_sums[w];
    }
    return total;
}

// The first nvec*4 values as float4 packs, then the tail.
__global__ void __launch_bounds__(kThreads)
    sum_squares_kernel(double* __restrict__ partials, const float* __restrict__ x, std::size_t n,
                       std::size_t nvec) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    double acc = 0.0;
    for (std::size_t i = tid; i < nvec; i += stride) {
        const float4 f = reinterpret_cast<const float4*>(x)[i];
        const double a = f.x, b = f.y, c = f.z, d = f.w;
        acc += a * a + b * b + c * c + d * d;
    }
    for (std::size_t i = nvec * 4 + tid; i < n; i += stride) {
        const double a = x[i];
        acc += a * a;
    }
    const double total = block_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// One block: partials[0] = sum of partials[0..count) (each thread reads its strided share first,
// so overwriting partials[0] after the barrier is safe).
__global__ void __launch_bounds__(kThreads)
    sum_partials_double_kernel(double* partials, int count) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < count; i += kThreads) acc += partials[i];
    const double total = block_sum(acc);
    if (threadIdx.x == 0) partials[0] = total;
}

}  // namespace

double sum_squares(const float* x, std::size_t n, double* partials, cudaStream_t stream) {
    if (n > 0) {
        const std::size_t nvec = aligned16(x) ? n / 4 : 0;
        sum_squares_kernel<<<kSumSquaresPartials, kThreads, 0, stream>>>(partials, x, n, nvec);
        check_launch("sum_squares_kernel");
        sum_partials_double_kernel<<<1, kThreads, 0, stream>>>(partials, kSumSquaresPartials);
        check_launch("sum_partials_double_kernel");
    }
    double result = 0.0;
    if (n > 0) {
        check(cudaMemcpyAsync(&result, partials, sizeof(double), cudaMemcpyDeviceToHost, stream),
              "cudaMemcpyAsync of the sum of squares");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize after sum_squares");
    return result;
}

}  // namespace arch::cuda
