// kernels/cpu/fast_math.h: exp and tanh written so that the compiler vectorises loops that call them
// (libm's expf/tanhf are scalar calls). exp: Cody-Waite range reduction + degree-6 polynomial,
// relative error below 2e-7 on [-87, 88], inputs clamped to that range. tanh(u) = 1 - 2/(e^{2u}+1),
// absolute error below 1e-7. Both are used in the fp32 CPU kernels only.
#pragma once

#include <bit>
#include <cstdint>

namespace arch::cpu {

inline float fast_exp(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    const float n = __builtin_floorf(x * 1.44269504088896341f + 0.5f);
    const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // x - n*ln2, ln2 split in two parts
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    return p * std::bit_cast<float>(bits);
}

inline float fast_tanh(float u) { return 1.0f - 2.0f / (fast_exp(2.0f * u) + 1.0f); }

}  // namespace arch::cpu
