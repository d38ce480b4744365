// kernels/cpu/rmsnorm.cpp: RMSNorm (the Llama family's norm) forward and backward on the CPU, fp32.
// Backward accumulates (+=) into parameter and input gradients, so callers zero them once per step.
// Shapes: inp, out (N, C); rstd (N) is saved by forward for backward. No mean, no bias.
#include <cmath>

#include "kernels/cpu/ops.h"

namespace arch::cpu {

// out = x * rstd * weight, rstd = 1 / sqrt(mean(x²) + eps), per row of C values
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, float eps, int N, int C) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        const float* x = inp + static_cast<std::size_t>(i) * C;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; ++c) ss += x[c] * x[c];
        const float s = 1.0f / std::sqrt(ss / C + eps);
        float* o = out + static_cast<std::size_t>(i) * C;
        for (int c = 0; c < C; ++c) o[c] = x[c] * s * weight[c];
        rstd[i] = s;
    }
}

// dx = s (w dy) - s³ x mean(w dy x); dw += dy x s
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        const float* dy = dout + static_cast<std::size_t>(i) * C;
        const float* x = inp + static_cast<std::size_t>(i) * C;
        float* dx = dinp + static_cast<std::size_t>(i) * C;
        const float s = rstd[i];
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int c = 0; c < C; ++c) dot += weight[c] * dy[c] * x[c];
        const float k = s * s * s * dot / C;
        for (int c = 0; c < C; ++c) dx[c] += s * weight[c] * dy[c] - k * x[c];
    }
    // The weight's gradient, one column per iteration, rows summed in order (deterministic).
#pragma omp parallel for
    for (int c = 0; c < C; ++c) {
        float dw = 0.0f;
        for (int i = 0; i < N; ++i)
            dw += dout[static_cast<std::size_t>(i) * C + c] * inp[static_cast<std::size_t>(i) * C + c] * rstd[i];
        dweight[c] += dw;
    }
}

}  // namespace arch::cpu
