// kernels/cpu/gelu.cpp: GELU with the tanh approximation (GPT-2's "gelu_new"), forward and backward.
// Shapes: elementwise over n values; backward accumulates into dinp.
#include <cmath>

#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/ops.h"

namespace arch::cpu {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
}

// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
void gelu_forward(float* out, const float* inp, std::size_t n) {
#pragma omp parallel for simd
    for (std::size_t i = 0; i < n; ++i) {
        const float x = inp[i];
        out[i] = 0.5f * x * (1.0f + fast_tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
#pragma omp parallel for simd
    for (std::size_t i = 0; i < n; ++i) {
        const float x = inp[i];
        const float u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
        const float th = fast_tanh(u);
        const float sech2 = 1.0f - th * th;
        const float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += grad * dout[i];
    }
}

}  // namespace arch::cpu
