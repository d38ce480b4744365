// tests/cuda/model_compare.h: what the whole-model GPU tests share: a family's init rounded to bf16
// (so the GPU's bf16 weights and the CPU reference's fp32 weights are the same numbers), random
// token ids, and the per-tensor comparison (relative L2 error and cosine) their tolerances use.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "core/transformer.h"
#include "kernels/cuda/bf16_math.h"

namespace cuda_test {

// The config's family init (core/transformer.h init_params), every value rounded to bf16.
inline std::vector<float> bf16_init(const arch::ModelConfig& c, uint64_t seed) {
    std::vector<float> p = arch::init_params(c, seed);
    for (float& x : p) x = arch::cuda::bf16_bits_to_float(arch::cuda::float_to_bf16_bits(x));
    return p;
}

inline std::vector<int> random_tokens(std::size_t n, int vocab, uint64_t seed) {
    arch::Rng rng(seed);
    std::vector<int> t(n);
    for (int& x : t) x = static_cast<int>(rng.below(static_cast<uint64_t>(vocab)));
    return t;
}

struct Diff {
    double rel_l2, cosine;
};

// ||gpu - cpu|| / ||cpu|| and the cosine of the angle between them (an all-zero reference: the
// absolute error, and cosine 1 when gpu is all zero too).
inline Diff compare(const float* gpu, const float* cpu, std::size_t n) {
    double d = 0, c2 = 0, g2 = 0, dot = 0;
    for (std::size_t i = 0; i < n; ++i) {
        d += (gpu[i] - cpu[i]) * static_cast<double>(gpu[i] - cpu[i]);
        c2 += static_cast<double>(cpu[i]) * cpu[i];
        g2 += static_cast<double>(gpu[i]) * gpu[i];
        dot += static_cast<double>(gpu[i]) * cpu[i];
    }
    if (c2 == 0) return {std::sqrt(d), g2 == 0 ? 1.0 : 0.0};
    return {std::sqrt(d / c2), dot / std::sqrt(c2 * g2 + 1e-300)};
}

}  // namespace cuda_test
