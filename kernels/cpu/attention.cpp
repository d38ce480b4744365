// kernels/cpu/attention.cpp: causal multi-head self-attention, forward and backward, fp32.
// Shapes: inp (B,T,3C) holds q, k, v side by side; out (B,T,C); att (B,NH,T,T) is the softmax,
// saved by forward (entries above the diagonal are 0). hs = C/NH, scores scaled by 1/sqrt(hs).
// Backward runs one (b, h) pair per thread, so dk and dv never race; scratch holds d(att) rows.
#include <cmath>

#include "kernels/cpu/ops.h"

namespace arch::cpu {

void attention_forward(float* out, float* att, const float* inp, int B, int T, int C, int NH) {
    const int C3 = 3 * C, hs = C / NH;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(3)
    for (int b = 0; b < B; ++b) {
        for (int h = 0; h < NH; ++h) {
            for (int t = 0; t < T; ++t) {
                const float* q = inp + (static_cast<std::size_t>(b) * T + t) * C3 + h * hs;
                float* a = att + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
                float maxval = -INFINITY;
                for (int t2 = 0; t2 <= t; ++t2) {
                    const float* k = inp + (static_cast<std::size_t>(b) * T + t2) * C3 + h * hs + C;
                    float s = 0.0f;
#pragma omp simd reduction(+ : s)
                    for (int i = 0; i < hs; ++i) s += q[i] * k[i];
                    s *= scale;
                    a[t2] = s;
                    if (s > maxval) maxval = s;
                }
                float sum = 0.0f;
                for (int t2 = 0; t2 <= t; ++t2) {
                    a[t2] = std::exp(a[t2] - maxval);
                    sum += a[t2];
                }
                const float inv = 1.0f / sum;
                for (int t2 = 0; t2 <= t; ++t2) a[t2] *= inv;
                for (int t2 = t + 1; t2 < T; ++t2) a[t2] = 0.0f;

                float* o = out + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
                for (int i = 0; i < hs; ++i) o[i] = 0.0f;
                for (int t2 = 0; t2 <= t; ++t2) {
                    const float* v = inp + (static_cast<std::size_t>(b) * T + t2) * C3 + h * hs + 2 * C;
                    const float w = a[t2];
                    for (int i = 0; i < hs; ++i) o[i] += w * v[i];
                }
            }
        }
    }
}

void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp, const float* att, int B,
                        int T, int C, int NH) {
    const int C3 = 3 * C, hs = C / NH;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; ++b) {
        for (int h = 0; h < NH; ++h) {
            for (int t = 0; t < T; ++t) {
                const float* a = att + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
                float* da = scratch + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
                const float* dy = dout + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
                // out = att @ v: d(att) and dv.
                for (int t2 = 0; t2 <= t; ++t2) {
                    const float* v = inp + (static_cast<std::size_t>(b) * T + t2) * C3 + h * hs + 2 * C;
                    float* dv = dinp + (static_cast<std::size_t>(b) * T + t2) * C3 + h * hs + 2 * C;
                    float s = 0.0f;
#pragma omp simd reduction(+ : s)
                    for (int i = 0; i < hs; ++i) {
                        s += v[i] * dy[i];
                        dv[i] += a[t2] * dy[i];
                    }
                    da[t2] = s;
                }
                // softmax: d(pre) = att * (d(att) - sum(att * d(att))), kept in da.
                float dot = 0.0f;
                for (int t2 = 0; t2 <= t; ++t2) dot += a[t2] * da[t2];
                for (int t2 = 0; t2 <= t; ++t2) da[t2] = a[t2] * (da[t2] - dot);
                // pre = q . k * scale: dq and dk.
                const float* q = inp + (static_cast<std::size_t>(b) * T + t) * C3 + h * hs;
                float* dq = dinp + (static_cast<std::size_t>(b) * T + t) * C3 + h * hs;
                for (int t2 = 0; t2 <= t; ++t2) {
                    const float* k = inp + (static_cast<std::size_t>(b) * T + t2) * C3 + h * hs + C;
                    float* dk = dinp + (static_cast<std::size_t>(b) * T + t2) * C3 + h * hs + C;
                    const float g = da[t2] * scale;
                    for (int i = 0; i < hs; ++i) {
                        dq[i] += k[i] * g;
                        dk[i] += q[i] * g;
                    }
                }
            }
        }
    }
}

}  // namespace arch::cpu
