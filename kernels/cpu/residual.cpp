// kernels/cpu/residual.cpp: the residual add, forward and backward (backward accumulates), fp32.
#include "kernels/cpu/ops.h"

namespace arch::cpu {

void residual_forward(float* out, const float* a, const float* b, std::size_t n) {
#pragma omp parallel for simd
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, std::size_t n) {
#pragma omp parallel for simd
    for (std::size_t i = 0; i < n; ++i) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

}  // namespace arch::cpu
