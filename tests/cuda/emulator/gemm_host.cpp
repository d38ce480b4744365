// tests/cuda/emulator/gemm_host.cpp: a host GEMM with the contract of kernels/cuda/gemm.h, which the
// emulated build links instead of gemm.cpp (cuBLASLt cannot run here).
// fp32 accumulation in k order; D bf16 (round to nearest even) or fp32; bias / gelu_bias epilogues.
#include "kernels/cuda/gemm.h"
#include <string>
#include <vector>
#include "core/error.h"
#include "kernels/cuda/bf16_math.h"

namespace arch::cuda {
GemmContext::GemmContext(cudaStream_t s) : stream_(s) {}
GemmContext::~GemmContext() {}

static float f(const __nv_bfloat16& b) { std::uint16_t u; std::memcpy(&u, &b, 2); return bf16_bits_to_float(u); }
static __nv_bfloat16 h(float x) { std::uint16_t u = float_to_bf16_bits(x); __nv_bfloat16 b; std::memcpy(&b, &u, 2); return b; }

void gemm(GemmContext&, void* D, bool d_fp32, const __nv_bfloat16* A, bool ta, const __nv_bfloat16* B, bool tb, int M,
          int N, int K, float alpha, float beta, const GemmBatch& batch, Epilogue ep, const __nv_bfloat16* bias,
          __nv_bfloat16* aux) {
    if (M <= 0 || N <= 0 || K <= 0 || batch.count <= 0) throw Error("gemm: sizes must be positive");
    if (ep != Epilogue::none && (d_fp32 || beta != 0.0f || bias == nullptr || batch.count != 1))
        throw Error("gemm: an epilogue needs a bf16 output, beta = 0, a bias and no batching");
    if (ep == Epilogue::gelu_bias && (aux == nullptr || N % 8 != 0))
        throw Error("gemm: the GELU epilogue needs an aux buffer and N a multiple of 8");
    if (batch.count > 1 && (batch.stride_a == 0 || batch.stride_d == 0)) fprintf(stderr, "EMU WARN: batched gemm with zero stride\n");
    std::vector<float> a(static_cast<size_t>(M) * K), b(static_cast<size_t>(K) * N);
    for (int g = 0; g < batch.count; ++g) {
        const __nv_bfloat16* Ag = A + g * batch.stride_a;
        const __nv_bfloat16* Bg = B + g * batch.stride_b;
        for (int m = 0; m < M; ++m)
            for (int k = 0; k < K; ++k) a[(size_t)m * K + k] = f(ta ? Ag[(size_t)k * M + m] : Ag[(size_t)m * K + k]);
        for (int k = 0; k < K; ++k)
            for (int n = 0; n < N; ++n) b[(size_t)k * N + n] = f(tb ? Bg[(size_t)n * K + k] : Bg[(size_t)k * N + n]);
        for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
                float s = 0;
                for (int k = 0; k < K; ++k) s += a[(size_t)m * K + k] * b[(size_t)k * N + n];
                s *= alpha;
                const size_t di = g * batch.stride_d + (size_t)m * N + n;
                if (d_fp32) {
                    float* d = static_cast<float*>(D);
                    d[di] = (beta != 0 ? beta * d[di] : 0.0f) + s;
                } else {
                    __nv_bfloat16* d = static_cast<__nv_bfloat16*>(D);
                    float v = (beta != 0 ? beta * f(d[di]) : 0.0f) + s;
                    if (ep != Epilogue::none) v += f(bias[n]);
                    if (ep == Epilogue::gelu_bias) {
                        aux[(size_t)m * N + n] = h(v);
                        v = gelu_tanh(v);
                    }
                    d[di] = h(v);
                }
            }
    }
}
}  // namespace arch::cuda
