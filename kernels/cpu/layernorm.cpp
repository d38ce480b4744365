// kernels/cpu/layernorm.cpp: LayerNorm forward and backward on the CPU, fp32, eps 1e-5.
// Backward accumulates (+=) into parameter and input gradients, so callers zero them once per step.
// Shapes: inp, out (N, C); mean and rstd are (N) and are saved by forward for backward.
#include <cmath>

#include "kernels/cpu/ops.h"

namespace arch::cpu {

// out = (x - mean) * rstd * weight + bias, per row of C values
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
    const float eps = 1e-5f;
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        const float* x = inp + static_cast<std::size_t>(i) * C;
        float m = 0.0f;
#pragma omp simd reduction(+ : m)
        for (int c = 0; c < C; ++c) m += x[c];
        m /= C;
        float var = 0.0f;
#pragma omp simd reduction(+ : var)
        for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
        var /= C;
        const float s = 1.0f / std::sqrt(var + eps);
        float* o = out + static_cast<std::size_t>(i) * C;
        for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
        mean[i] = m;
        rstd[i] = s;
    }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
    // Input gradient, one row per iteration.
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        const float* dy = dout + static_cast<std::size_t>(i) * C;
        const float* x = inp + static_cast<std::size_t>(i) * C;
        float* dx = dinp + static_cast<std::size_t>(i) * C;
        const float m = mean[i], s = rstd[i];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
        for (int c = 0; c < C; ++c) {
            const float norm = (x[c] - m) * s;
            const float dnorm = weight[c] * dy[c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        for (int c = 0; c < C; ++c) {
            const float norm = (x[c] - m) * s;
            const float dnorm = weight[c] * dy[c];
            dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        }
    }
    // Parameter gradients, one column per iteration, rows summed in order (deterministic).
#pragma omp parallel for
    for (int c = 0; c < C; ++c) {
        float dw = 0.0f, db = 0.0f;
        for (int i = 0; i < N; ++i) {
            const float dy = dout[static_cast<std::size_t>(i) * C + c];
            const float norm = (inp[static_cast<std::size_t>(i) * C + c] - mean[i]) * rstd[i];
            dw += norm * dy;
            db += dy;
        }
        dweight[c] += dw;
        dbias[c] += db;
    }
}

}  // namespace arch::cpu
