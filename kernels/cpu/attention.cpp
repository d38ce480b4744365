// kernels/cpu/attention.cpp: causal self-attention with grouped KV heads, forward and backward, fp32.
// Shapes: inp (B,T,(NH+2KV)hs) holds q (NH heads), then k and v (KV heads each); out (B,T,C); att
// (B,NH,T,T) is the softmax, saved by forward (entries above the diagonal are 0). hs = C/NH; query
// head h reads KV head h / (NH/KV); KV = NH is GPT-2's attention. Scores scaled by 1/sqrt(hs).
// Backward runs one (b, KV head) pair per thread, with that KV head's query heads in order inside,
// so dk and dv never race and their sums keep a fixed order; scratch holds d(att) rows.
#include <cmath>

#include "kernels/cpu/ops.h"

namespace arch::cpu {

namespace {
// Where q of head h, and k and v of KV head g, start in a row of inp.
struct QkvRow {
    int width, hs, k0, v0;
    QkvRow(int C, int NH, int KV) : width((NH + 2 * KV) * (C / NH)), hs(C / NH), k0(C), v0(C + KV * (C / NH)) {}
    std::size_t row(int b, int T, int t) const { return (static_cast<std::size_t>(b) * T + t) * width; }
};
}  // namespace

void attention_forward(float* out, float* att, const float* inp, int B, int T, int C, int NH, int KV) {
    const QkvRow r(C, NH, KV);
    const int hs = r.hs, group = NH / KV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(3)
    for (int b = 0; b < B; ++b) {
        for (int h = 0; h < NH; ++h) {
            for (int t = 0; t < T; ++t) {
                const int g = h / group;
                const float* q = inp + r.row(b, T, t) + h * hs;
                float* a = att + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
                float maxval = -INFINITY;
                for (int t2 = 0; t2 <= t; ++t2) {
                    const float* k = inp + r.row(b, T, t2) + r.k0 + g * hs;
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
                    const float* v = inp + r.row(b, T, t2) + r.v0 + g * hs;
                    const float w = a[t2];
                    for (int i = 0; i < hs; ++i) o[i] += w * v[i];
                }
            }
        }
    }
}

void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp, const float* att, int B,
                        int T, int C, int NH, int KV) {
    const QkvRow r(C, NH, KV);
    const int hs = r.hs, group = NH / KV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; ++b) {
        for (int g = 0; g < KV; ++g) {
            for (int h = g * group; h < (g + 1) * group; ++h) {
                for (int t = 0; t < T; ++t) {
                    const float* a = att + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
                    float* da = scratch + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
                    const float* dy = dout + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
                    // out = att @ v: d(att) and dv.
                    for (int t2 = 0; t2 <= t; ++t2) {
                        const float* v = inp + r.row(b, T, t2) + r.v0 + g * hs;
                        float* dv = dinp + r.row(b, T, t2) + r.v0 + g * hs;
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
                    const float* q = inp + r.row(b, T, t) + h * hs;
                    float* dq = dinp + r.row(b, T, t) + h * hs;
                    for (int t2 = 0; t2 <= t; ++t2) {
                        const float* k = inp + r.row(b, T, t2) + r.k0 + g * hs;
                        float* dk = dinp + r.row(b, T, t2) + r.k0 + g * hs;
                        const float d = da[t2] * scale;
                        for (int i = 0; i < hs; ++i) {
                            dq[i] += k[i] * d;
                            dk[i] += q[i] * d;
                        }
                    }
                }
            }
        }
    }
}

}  // namespace arch::cpu
