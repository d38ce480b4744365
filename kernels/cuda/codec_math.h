// kernels/cuda/codec_math.h: the scalar math of the int8, int4 and fp4 codecs (absmax -> scale,
// quantize one value, pack one code byte, dequantize), shared by the CUDA kernels (device_codec.cu)
// and by tests/cuda/test_codec_math.cpp, which holds it byte-equal to compression/blockwise.cpp.
// Every float operation is IEEE round-to-nearest and never contracted into an FMA (the *_rn helpers
// pick __fmul_rn & co. on the device), so the device produces the bits compression/ produces.
// Payload (docs/codecs.md): [ceil(n/block) x f32 scale][codes]; code byte j holds element j (int8),
// or elements 2j (low nibble) and 2j+1 (high nibble, 0 past the end) (int4, fp4).
#pragma once

#include <cfloat>
#include <cstdint>
#include <cstring>

#include "kernels/cuda/host_device.h"

namespace arch::cuda::codec_math {

enum class Quant : int { int8, int4, fp4 };

constexpr std::uint32_t kAbsMask = 0x7fffffffu;
constexpr std::uint32_t kInfBits = 0x7f800000u;  // |x| bits >= this: inf or NaN
constexpr float kRoundMagic = 12582912.0f;       // 1.5 * 2^23: (v + M) - M = rint(v), |v| < 2^22
constexpr double kRoundMagicDouble =
    6755399441055744.0;  // 1.5 * 2^52: the same in double, |v| < 2^51

// ---- IEEE round-to-nearest arithmetic that no compiler may fuse or reorder ----------------------
ARCH_HD inline float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
ARCH_HD inline float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
ARCH_HD inline float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
ARCH_HD inline float div_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}
ARCH_HD inline double add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}
ARCH_HD inline double sub_rn(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}
ARCH_HD inline double div_rn(double a, double b) {
#ifdef __CUDA_ARCH__
    return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}



// |x| as bits. For |x| the integer order of the bits is the order of the values, so the absmax of a
// block is the max of these (exact, in any order), and a result >= kInfBits flags inf or NaN.
ARCH_HD inline std::uint32_t abs_bits(float x) {
    return float_bits(x) & kAbsMask;
}
ARCH_HD inline float abs_value(float x) {
    return bits_float(abs_bits(x));
}  // fabs, bit for bit

// ---- layout -------------------------------------------------------------------------------------
ARCH_HD inline std::uint64_t blocks_of(std::uint64_t n, std::uint64_t block) {
    return (n + block - 1) / block;
}
ARCH_HD inline std::uint64_t elements_per_byte(Quant q) {
    return q == Quant::int8 ? 1 : 2;
}
ARCH_HD inline std::uint64_t code_bytes(Quant q, std::uint64_t n) {
    return q == Quant::int8 ? n : (n + 1) / 2;
}
// The codec block of code byte j (block is a multiple of 8, so a byte never spans two blocks).
ARCH_HD inline std::uint64_t block_of_byte(Quant q, std::uint64_t j, std::uint64_t block) {
    return j * elements_per_byte(q) / block;
}
ARCH_HD inline std::uint64_t payload_bytes(Quant q, std::uint64_t n, std::uint64_t block) {
    return 4 * blocks_of(n, block) + code_bytes(q, n);
}

// ---- encode -------------------------------------------------------------------------------------
// Scale of a block from its absmax: absmax/127 (int8), absmax/7 (int4), absmax/6 (fp4).
ARCH_HD inline float scale_of(Quant q, float absmax) {
    return div_rn(absmax, q == Quant::int8 ? 127.0f : q == Quant::int4 ? 7.0f : 6.0f);
}

// round(x/s) to nearest even, clamped to [-qmax, qmax]. Normal scales multiply by the float 1/s and
// round with the magic number; subnormal scales divide in double (1/s would overflow); s = 0
// gives 0.
ARCH_HD inline int quantize_uniform(float x, float s, float qmax) {
    if (s >= FLT_MIN) {
        float v = mul_rn(x, div_rn(1.0f, s));
        v = sub_rn(add_rn(v, kRoundMagic), kRoundMagic);
        v = v < -qmax ? -qmax : v;  // std::max(v, -qmax)
        v = qmax < v ? qmax : v;    // std::min(v, qmax)
        return static_cast<int>(v);
    }
    if (!(s > 0.0f)) return 0;
    const double dq = qmax;
    double v = div_rn(static_cast<double>(x), static_cast<double>(s));
    // Clamping before rounding gives the CPU's rint-then-clamp (the bounds are integers) and keeps
    // |v| small enough for the magic-number rounding.
    v = v < -dq ? -dq : (dq < v ? dq : v);
    v = sub_rn(add_rn(v, kRoundMagicDouble), kRoundMagicDouble);
    return static_cast<int>(v);
}

// e2m1 code of x*inv: sign bit 3 (x < 0; -0 is +), magnitude index of {0,.5,1,1.5,2,3,4,6}
// chosen by the midpoints (ties go to the lower magnitude).
ARCH_HD inline std::uint32_t e2m1_code(float x, float inv) {
    const float v = mul_rn(abs_value(x), inv);
    const int m = (v > 0.25f) + (v > 0.75f) + (v > 1.25f) + (v > 1.75f) + (v > 2.5f) + (v > 3.5f) +
                  (v > 5.0f);
    return static_cast<std::uint32_t>(m) | (x < 0.0f ? 8u : 0u);
}

// fp4 code of x in a block of scale s; subnormal scales divide in double first, s = 0 gives code 0.
ARCH_HD inline std::uint32_t fp4_code(float x, float s) {
    if (s >= FLT_MIN) return e2m1_code(x, div_rn(1.0f, s));
    const double v = s > 0.0f ? div_rn(static_cast<double>(x), static_cast<double>(s)) : 0.0;
    return e2m1_code(static_cast<float>(v), 1.0f);
}

// The 4-bit code of x: q+8 with q in [-7,7] (int4), or the e2m1 code (fp4).
ARCH_HD inline std::uint32_t nibble_code(Quant q, float x, float s) {
    return q == Quant::fp4 ? fp4_code(x, s)
                           : static_cast<std::uint32_t>(quantize_uniform(x, s, 7.0f) + 8);
}

// Code byte j of n values x, all of whose elements lie in a block of scale s.
ARCH_HD inline std::uint8_t code_byte(Quant q, const float* x, std::uint64_t n, std::uint64_t j,
                                      float s) {
    if (q == Quant::int8) {
        return static_cast<std::uint8_t>(
            static_cast<std::int8_t>(quantize_uniform(x[j], s, 127.0f)));
    }
    const std::uint64_t i = 2 * j;
    const std::uint32_t lo = nibble_code(q, x[i], s);
    const std::uint32_t hi = i + 1 < n ? nibble_code(q, x[i + 1], s) : 0u;
    return static_cast<std::uint8_t>(lo | (hi << 4));
}

// ---- decode -------------------------------------------------------------------------------------
ARCH_HD inline float clamp_finite(float v) {
    v = v < -FLT_MAX ? -FLT_MAX : v;   // std::max(v, -FLT_MAX)
    return FLT_MAX < v ? FLT_MAX : v;  // std::min(v, FLT_MAX)
}

// Value of an e2m1 code (bit 3: sign, so code 8 is -0).
ARCH_HD inline float e2m1_value(std::uint32_t code) {
    float m = 0.0f;
    switch (code & 7u) {
        case 0:
            m = 0.0f;
            break;
        case 1:
            m = 0.5f;
            break;
        case 2:
            m = 1.0f;
            break;
        case 3:
            m = 1.5f;
            break;
        case 4:
            m = 2.0f;
            break;
        case 5:
            m = 3.0f;
            break;
        case 6:
            m = 4.0f;
            break;
        default:
            m = 6.0f;
            break;
    }
    return (code & 8u) ? -m : m;
}

ARCH_HD inline float nibble_value(Quant q, std::uint32_t nibble, float s) {
    const float v =
        q == Quant::fp4 ? e2m1_value(nibble) : static_cast<float>(static_cast<int>(nibble) - 8);
    return clamp_finite(mul_rn(v, s));
}

// Writes the element(s) of code byte j (value c) of a block with scale s into out (n floats).
ARCH_HD inline void decode_byte(Quant q, std::uint8_t c, float s, std::uint64_t j, std::uint64_t n,
                                float* out) {
    if (q == Quant::int8) {
        out[j] = clamp_finite(mul_rn(static_cast<float>(static_cast<std::int8_t>(c)), s));
        return;
    }
    const std::uint64_t i = 2 * j;
    out[i] = nibble_value(q, c & 15u, s);
    if (i + 1 < n) out[i + 1] = nibble_value(q, static_cast<std::uint32_t>(c) >> 4, s);
}

}  // namespace arch::cuda::codec_math
