// compression/float_formats.cpp: the fp32 (identity), fp16 and bf16 codecs, and the finite checks.
// Error bounds: fp32 exact. fp16 rounds to nearest even: |e| <= 2^-11 |x| for 2^-14 <= |x| <= 65504,
// |e| <= 2^-25 below (subnormal halves); |x| > 65504 saturates to +-65504 (|e| = |x| - 65504).
// bf16 rounds to nearest even: |e| <= 2^-8 |x| for normal floats, saturating at +-3.3895e38.
#include <cmath>
#include <limits>

#include "compression/detail.h"
#include "core/bf16.h"
#include "core/error.h"

namespace arch::compression::detail {

[[noreturn]] void throw_non_finite(std::span<const float> x, std::string_view codec) {
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (!std::isfinite(x[i])) {
            throw Error(std::string(codec) + ": input element " + std::to_string(i) + " is " +
                        (std::isnan(x[i]) ? "NaN" : "infinite") +
                        "; refusing to encode a non-finite pseudo-gradient");
        }
    }
    throw Error(std::string(codec) + ": input holds a non-finite value");
}

void require_finite(std::span<const float> x, std::string_view codec) {
    const std::size_t n = x.size();
    const float* p = x.data();
    float z = 0.0f;  // x*0 is 0 for finite x and NaN for inf/NaN
#pragma omp parallel for schedule(static) reduction(+ : z) if (n > 4 * kChunk)
    for (std::size_t c = 0; c < n; c += kChunk) {
        const std::size_t e = std::min(n, c + kChunk);
        float zc = 0.0f;
#pragma omp simd reduction(+ : zc)
        for (std::size_t i = c; i < e; ++i) zc += p[i] * 0.0f;
        z += zc;
    }
    if (z != 0.0f) throw_non_finite(x, codec);
}

void require_finite_payload(const std::byte* p, std::size_t n, std::string_view what) {
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t b = load_le<std::uint32_t>(p + 4 * i);
        if ((b & 0x7f800000u) == 0x7f800000u) {
            throw Error("corrupt payload: " + std::string(what) + " " + std::to_string(i) +
                        " is not finite");
        }
    }
}

// ---- fp32 ---------------------------------------------------------------------------------------
Bytes encode_fp32(std::span<const float> x) {
    require_finite(x, "fp32");
    Bytes out = payload_buffer(x.size() * 4);
    if (!x.empty()) std::memcpy(out.data(), x.data(), out.size());
    return out;
}

void decode_fp32(ByteSpan payload, std::span<float> out) {
    require_finite_payload(payload.data(), out.size(), "fp32 value");
    if (!out.empty()) std::memcpy(out.data(), payload.data(), out.size() * 4);
}

// ---- fp16 ---------------------------------------------------------------------------------------
std::uint16_t float_to_half(float f) {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x >= 0x477ff000u) return sign | 0x7bffu;  // >= 65520 would round to inf: saturate
    if (x < 0x38800000u) {                        // below 2^-14: a subnormal half (or zero)
        // Adding 0.5 puts the value where the float ulp is 2^-24, the subnormal half step.
        const float a = std::bit_cast<float>(x) + 0.5f;
        return sign | static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(a) - 0x3f000000u);
    }
    const std::uint32_t odd = (x >> 13) & 1u;
    x += 0xc8000fffu + odd;  // rebias exponent 127 -> 15 and round to nearest even
    return sign | static_cast<std::uint16_t>(x >> 13);
}

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t e = (h >> 10) & 0x1fu;
    const std::uint32_t m = h & 0x3ffu;
    if (e == 0) {
        const float v = static_cast<float>(m) * 0x1p-24f;
        return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

Bytes encode_fp16(std::span<const float> x) {
    require_finite(x, "fp16");
    const std::size_t n = x.size();
    Bytes out = payload_buffer(n * 2);
    std::byte* o = out.data();
#pragma omp parallel for schedule(static) if (n > 4 * kChunk)
    for (std::size_t i = 0; i < n; ++i) store_le(o + 2 * i, float_to_half(x[i]));
    return out;
}

void decode_fp16(ByteSpan payload, std::span<float> out) {
    const std::size_t n = out.size();
    const std::byte* h = payload.data();
    for (std::size_t i = 0; i < n; ++i) {
        if ((load_le<std::uint16_t>(h + 2 * i) & 0x7c00u) == 0x7c00u) {
            throw Error("corrupt payload: fp16 value " + std::to_string(i) + " is not finite");
        }
    }
#pragma omp parallel for schedule(static) if (n > 4 * kChunk)
    for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(load_le<std::uint16_t>(h + 2 * i));
}

// ---- bf16 ---------------------------------------------------------------------------------------
Bytes encode_bf16(std::span<const float> x) {
    require_finite(x, "bf16");
    const std::size_t n = x.size();
    Bytes out = payload_buffer(n * 2);
    std::byte* o = out.data();
#pragma omp parallel for schedule(static) if (n > 4 * kChunk)
    for (std::size_t i = 0; i < n; ++i) store_le(o + 2 * i, float_to_bf16(x[i]));
    return out;
}

void decode_bf16(ByteSpan payload, std::span<float> out) {
    const std::size_t n = out.size();
    const std::byte* h = payload.data();
    for (std::size_t i = 0; i < n; ++i) {
        if (!bf16_is_finite(load_le<std::uint16_t>(h + 2 * i))) {
            throw Error("corrupt payload: bf16 value " + std::to_string(i) + " is not finite");
        }
    }
#pragma omp parallel for schedule(static) if (n > 4 * kChunk)
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = bf16_to_float(load_le<std::uint16_t>(h + 2 * i));
    }
}

}  // namespace arch::compression::detail
