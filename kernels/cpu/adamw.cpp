// kernels/cpu/adamw.cpp: AdamW (decoupled weight decay, torch.optim.AdamW semantics) and the sum of
// squares behind global-norm clipping. sum_squares adds fixed 64K-element chunks in double, then the
// chunk sums in order, so its result never depends on the number of threads.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/ops.h"

namespace arch::cpu {

double sum_squares(const float* x, std::size_t n) {
    constexpr std::size_t kChunk = 1 << 16;
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> partial(chunks);
#pragma omp parallel for
    for (std::size_t c = 0; c < chunks; ++c) {
        const std::size_t end = std::min(n, (c + 1) * kChunk);
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (std::size_t i = c * kChunk; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
        partial[c] = s;
    }
    double total = 0.0;
    for (double p : partial) total += p;
    return total;
}

// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (mhat / (sqrt(vhat) + eps) + wd p), g = grad * grad_scale
void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, float grad_scale, int step) {
    const float bc1 = 1.0f - std::pow(beta1, static_cast<float>(step));
    const float bc2 = 1.0f - std::pow(beta2, static_cast<float>(step));
    const float decay = 1.0f - lr * weight_decay;
#pragma omp parallel for simd
    for (std::size_t i = 0; i < n; ++i) {
        const float g = grads[i] * grad_scale;
        const float mi = beta1 * m[i] + (1.0f - beta1) * g;
        const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        const float mhat = mi / bc1;
        const float vhat = vi / bc2;
        params[i] = params[i] * decay - lr * mhat / (std::sqrt(vhat) + eps);
    }
}

}  // namespace arch::cpu
