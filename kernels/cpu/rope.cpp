// kernels/cpu/rope.cpp: rotary position embeddings on the q and k heads of a qkv buffer, fp32.
// Shapes: inp, out, dinp, dout (B,T,(NH+2KV)hs); cos, sin (maxT, hs/2), from the model's rope_theta
// (and scaling). HF Llama's rotate-half pairing: element i of a head pairs with i + hs/2. The v heads
// pass through unchanged. Backward accumulates into dinp; rows are independent, so no races.
#include "kernels/cpu/ops.h"

namespace arch::cpu {

// (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) for the NH + KV rotated heads; v copied
void rope_forward(float* out, const float* inp, const float* cos, const float* sin, int B, int T, int NH, int KV,
                  int hs) {
    const int width = (NH + 2 * KV) * hs, rotated = (NH + KV) * hs, half = hs / 2;
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; ++b) {
        for (int t = 0; t < T; ++t) {
            const std::size_t row = (static_cast<std::size_t>(b) * T + t) * width;
            const float* x = inp + row;
            float* y = out + row;
            const float* c = cos + static_cast<std::size_t>(t) * half;
            const float* s = sin + static_cast<std::size_t>(t) * half;
            for (int h0 = 0; h0 < rotated; h0 += hs) {
                for (int i = 0; i < half; ++i) {
                    const float x1 = x[h0 + i], x2 = x[h0 + half + i];
                    y[h0 + i] = x1 * c[i] - x2 * s[i];
                    y[h0 + half + i] = x2 * c[i] + x1 * s[i];
                }
            }
            for (int j = rotated; j < width; ++j) y[j] = x[j];
        }
    }
}

// The transpose of the rotation: (d1, d2) -> (d1 cos + d2 sin, d2 cos - d1 sin)
void rope_backward(float* dinp, const float* dout, const float* cos, const float* sin, int B, int T, int NH, int KV,
                   int hs) {
    const int width = (NH + 2 * KV) * hs, rotated = (NH + KV) * hs, half = hs / 2;
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; ++b) {
        for (int t = 0; t < T; ++t) {
            const std::size_t row = (static_cast<std::size_t>(b) * T + t) * width;
            const float* dy = dout + row;
            float* dx = dinp + row;
            const float* c = cos + static_cast<std::size_t>(t) * half;
            const float* s = sin + static_cast<std::size_t>(t) * half;
            for (int h0 = 0; h0 < rotated; h0 += hs) {
                for (int i = 0; i < half; ++i) {
                    const float d1 = dy[h0 + i], d2 = dy[h0 + half + i];
                    dx[h0 + i] += d1 * c[i] + d2 * s[i];
                    dx[h0 + half + i] += d2 * c[i] - d1 * s[i];
                }
            }
            for (int j = rotated; j < width; ++j) dx[j] += dy[j];
        }
    }
}

}  // namespace arch::cpu
