// kernels/cuda/encoder.cu: token + position embedding, forward and backward, bf16 activations.
// Shapes: out, dout (B,T,C) bf16; inp (B,T) token ids; wte (Vp,C), wpe (maxT,C) bf16; dwte, dwpe
// fp32; wpe and dwpe may be null (the Llama family has no position embedding). Backward is
// deterministic without atomics: the host groups positions by token (counting sort of inp_host), one
// block per distinct token sums its positions in increasing order, and one block per t sums
// b = 0..B-1 in order for dwpe.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kBackwardThreads = 128;
constexpr int kMaxTokenId = 1 << 24;  // counting-sort bound; GPT-2's vocabulary is 50257

// out[n, c..c+VEC) = wte[inp[n], ...] + wpe[n % T, ...] (wpe null: + 0, not added); one thread per
// VEC channels of one position.
template <int VEC>
__global__ void encoder_forward_kernel(bf16* __restrict__ out, const int* __restrict__ inp,
                                       const bf16* __restrict__ wte, const bf16* __restrict__ wpe,
                                       int N, int T, int C) {
    const int groups = C / VEC;
    const std::size_t total = static_cast<std::size_t>(N) * groups;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += stride) {
        const int n = static_cast<int>(i / groups);
        const int c = static_cast<int>(i % groups) * VEC;
        float a[VEC], b[VEC];
        load_bf16<VEC>(a, wte + static_cast<std::size_t>(inp[n]) * C + c);
        if (wpe != nullptr) {
            load_bf16<VEC>(b, wpe + static_cast<std::size_t>(n % T) * C + c);
#pragma unroll
            for (int k = 0; k < VEC; ++k) a[k] += b[k];
        }
        store_bf16<VEC>(out + static_cast<std::size_t>(n) * C + c, a);
    }
}

// Block r sums rows of dout into dst row r (fp32, +=). For dwte (BY_TOKEN): r is the r-th distinct
// token, tokens[r], its positions positions[starts[r] .. starts[r+1]). For dwpe: r = t, positions
// t, T+t, ..., (B-1)T+t. Threads stride over groups of VEC channels; each channel's positions are
// added in list order, so the result does not depend on scheduling.
template <int VEC, bool BY_TOKEN>
__global__ void __launch_bounds__(kBackwardThreads)
    encoder_backward_kernel(float* __restrict__ dst, const bf16* __restrict__ dout,
                            const int* __restrict__ tokens, const int* __restrict__ starts,
                            const int* __restrict__ positions, int B, int T, int C) {
    const int r = blockIdx.x;
    int begin = 0, end = B;
    std::size_t dst_row = r;
    if constexpr (BY_TOKEN) {
        begin = starts[r];
        end = starts[r + 1];
        dst_row = static_cast<std::size_t>(tokens[r]);
    }
    for (int c = threadIdx.x * VEC; c < C; c += blockDim.x * VEC) {
        float acc[VEC] = {};
        for (int k = begin; k < end; ++k) {
            const int pos = BY_TOKEN ? positions[k] : k * T + r;
            float d[VEC];
            load_bf16<VEC>(d, dout + static_cast<std::size_t>(pos) * C + c);
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[j] += d[j];
        }
        float* o = dst + dst_row * C + c;
#pragma unroll
        for (int j = 0; j < VEC; ++j) o[j] += acc[j];
    }
}

void check_shape(const char* op, int B, int T, int C) {
    if (B <= 0 || T <= 0 || C <= 0) {
        throw Error(std::string(op) + ": B, T, C must be positive, got B=" + std::to_string(B) +
                    " T=" + std::to_string(T) + " C=" + std::to_string(C));
    }
}

}  // namespace

void encoder_forward(bf16* out, const int* inp, const bf16* wte, const bf16* wpe, int B, int T,
                     int C, cudaStream_t stream) {
    check_shape("encoder_forward", B, T, C);
    const int N = B * T;
    const bool vec = C % 8 == 0 && aligned16(out) && aligned16(wte) && aligned16(wpe);
    const std::size_t work = static_cast<std::size_t>(N) * (vec ? C / 8 : C);
    const unsigned grid =
        static_cast<unsigned>(std::min<std::size_t>((work + kThreads - 1) / kThreads, 1u << 16));
    if (vec) {
        encoder_forward_kernel<8><<<grid, kThreads, 0, stream>>>(out, inp, wte, wpe, N, T, C);
    } else {
        encoder_forward_kernel<1><<<grid, kThreads, 0, stream>>>(out, inp, wte, wpe, N, T, C);
    }
    check_launch("encoder_forward_kernel");
}

// Layout in scratch_ints: tokens[N] (distinct ids, increasing), starts[N+1], positions[N].
std::size_t encoder_backward_scratch_ints(int B, int T) {
    return 3 * static_cast<std::size_t>(B) * T + 1;
}

void encoder_backward(float* dwte, float* dwpe, int* scratch_ints, const bf16* dout,
                      const int* inp_host, int B, int T, int C, cudaStream_t stream) {
    check_shape("encoder_backward", B, T, C);
    const int N = B * T;

    // Counting sort of positions by token id, positions kept in increasing order within a token.
    int max_id = 0;
    for (int i = 0; i < N; ++i) {
        if (inp_host[i] < 0 || inp_host[i] >= kMaxTokenId) {
            throw Error("encoder_backward: token id " + std::to_string(inp_host[i]) +
                        " at position " + std::to_string(i) + " is out of range [0, " +
                        std::to_string(kMaxTokenId) + ")");
        }
        max_id = std::max(max_id, inp_host[i]);
    }
    std::vector<int> count(static_cast<std::size_t>(max_id) + 2, 0);
    for (int i = 0; i < N; ++i) ++count[static_cast<std::size_t>(inp_host[i]) + 1];
    for (std::size_t v = 1; v < count.size(); ++v)
        count[v] += count[v - 1];  // count[v] = first slot of id v
    std::vector<int> host(encoder_backward_scratch_ints(B, T));
    int* tokens = host.data();
    int* starts = tokens + N;
    int* positions = starts + N + 1;
    int distinct = 0;
    for (int v = 0; v <= max_id; ++v) {
        if (count[v + 1] > count[v]) {
            tokens[distinct] = v;
            starts[distinct] = count[v];
            ++distinct;
        }
    }
    starts[distinct] = N;
    for (int i = 0; i < N; ++i) positions[count[inp_host[i]]++] = i;

    // From pageable memory: returns once `host` has been staged, so it may go out of scope after.
    check(cudaMemcpyAsync(scratch_ints, host.data(), host.size() * sizeof(int),
                          cudaMemcpyHostToDevice, stream),
          "cudaMemcpyAsync of the encoder_backward buckets");
    const int* d_tokens = scratch_ints;
    const int* d_starts = scratch_ints + N;
    const int* d_positions = scratch_ints + 2 * N + 1;

    const bool vec = C % 8 == 0 && aligned16(dout);  // dwte, dwpe are written one float at a time
    if (vec) {
        encoder_backward_kernel<8, true><<<distinct, kBackwardThreads, 0, stream>>>(
            dwte, dout, d_tokens, d_starts, d_positions, B, T, C);
    } else {
        encoder_backward_kernel<1, true><<<distinct, kBackwardThreads, 0, stream>>>(
            dwte, dout, d_tokens, d_starts, d_positions, B, T, C);
    }
    check_launch("encoder_backward_kernel (wte)");
    if (dwpe == nullptr) return;
    if (vec) {
        encoder_backward_kernel<8, false>
            <<<T, kBackwardThreads, 0, stream>>>(dwpe, dout, nullptr, nullptr, nullptr, B, T, C);
    } else {
        encoder_backward_kernel<1, false>
            <<<T, kBackwardThreads, 0, stream>>>(dwpe, dout, nullptr, nullptr, nullptr, B, T, C);
    }
    check_launch("encoder_backward_kernel (wpe)");
}

}  // namespace arch::cuda
