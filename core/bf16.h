// core/bf16.h: bfloat16 as 16 bits: fp32's sign and 8-bit exponent (its whole range) and 8 bits of
// precision. The compression codec `bf16` and DES-LOC's moments on the wire (peers/protocol.h) use it.
#pragma once

#include <bit>
#include <cstdint>

namespace arch {

// Round to nearest even, saturating at ±3.3895e38 (the largest finite bf16): a finite float gives a
// finite bf16 within 2^-8 of it, relatively (normal floats). NaN stays NaN and infinity infinity, for
// whoever decodes it to refuse.
inline std::uint16_t float_to_bf16(float f) {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | ((x & 0x7fffffu) ? 0x40u : 0u));
    const std::uint32_t r = x + 0x7fffu + ((x >> 16) & 1u);
    std::uint16_t b = static_cast<std::uint16_t>(r >> 16);
    if ((b & 0x7f80u) == 0x7f80u) b = static_cast<std::uint16_t>((x >> 16 & 0x8000u) | 0x7f7fu);
    return b;
}

inline float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// Not finite: the exponent's bits all set (infinity or NaN).
inline bool bf16_is_finite(std::uint16_t b) { return (b & 0x7f80u) != 0x7f80u; }

}  // namespace arch
