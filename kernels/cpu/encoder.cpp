// kernels/cpu/encoder.cpp: token + position embedding, forward and backward, fp32.
// Shapes: out, dout (B,T,C); inp (B,T) token ids; wte (Vp,C); wpe (maxT,C), or null for a model
// without learned positions (Llama), when dwpe is null too.
// Backward runs over channels in parallel so that repeated tokens never race.
#include "kernels/cpu/ops.h"

namespace arch::cpu {

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) {
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; ++b) {
        for (int t = 0; t < T; ++t) {
            float* o = out + (static_cast<std::size_t>(b) * T + t) * C;
            const float* wt = wte + static_cast<std::size_t>(inp[b * T + t]) * C;
            if (wpe == nullptr) {
                for (int c = 0; c < C; ++c) o[c] = wt[c];
                continue;
            }
            const float* wp = wpe + static_cast<std::size_t>(t) * C;
            for (int c = 0; c < C; ++c) o[c] = wt[c] + wp[c];
        }
    }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) {
#pragma omp parallel for
    for (int c = 0; c < C; ++c) {
        for (int b = 0; b < B; ++b) {
            for (int t = 0; t < T; ++t) {
                const float d = dout[(static_cast<std::size_t>(b) * T + t) * C + c];
                dwte[static_cast<std::size_t>(inp[b * T + t]) * C + c] += d;
                if (dwpe != nullptr) dwpe[static_cast<std::size_t>(t) * C + c] += d;
            }
        }
    }
}

}  // namespace arch::cpu
