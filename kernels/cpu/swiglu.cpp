// kernels/cpu/swiglu.cpp: the Llama family's SwiGLU gate, forward and backward, fp32.
// Shapes: inp, dinp (N, 2F) hold gate (first F) and up (next F) per row, as the fused fcw produces
// them; out, dout (N, F). silu(g) = g sigmoid(g). Backward accumulates into dinp.
#include <cmath>

#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/ops.h"

namespace arch::cpu {

// out = silu(gate) * up
void swiglu_forward(float* out, const float* inp, int N, int F) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        const float* g = inp + static_cast<std::size_t>(i) * 2 * F;
        const float* u = g + F;
        float* o = out + static_cast<std::size_t>(i) * F;
#pragma omp simd
        for (int j = 0; j < F; ++j) o[j] = g[j] / (1.0f + fast_exp(-g[j])) * u[j];
    }
}

// dgate += dout up sig(g) (1 + g (1 - sig(g))); dup += dout silu(g)
void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        const float* g = inp + static_cast<std::size_t>(i) * 2 * F;
        const float* u = g + F;
        const float* dy = dout + static_cast<std::size_t>(i) * F;
        float* dg = dinp + static_cast<std::size_t>(i) * 2 * F;
        float* du = dg + F;
#pragma omp simd
        for (int j = 0; j < F; ++j) {
            const float sig = 1.0f / (1.0f + fast_exp(-g[j]));
            dg[j] += dy[j] * u[j] * sig * (1.0f + g[j] * (1.0f - sig));
            du[j] += dy[j] * g[j] * sig;
        }
    }
}

}  // namespace arch::cpu
