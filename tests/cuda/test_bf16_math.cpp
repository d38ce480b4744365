// tests/cuda/test_bf16_math.cpp: the host side of kernels/cuda/bf16_math.h, which the bf16 kernels
// run on the device: round to nearest even against the bytes of compression's bf16 codec,
// stochastic rounding (neighbours only, exact values kept, deterministic, unbiased), GELU and its
// derivative. Runs on the CPU in every build.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "compression/codec.h"
#include "kernels/cuda/bf16_math.h"

namespace {

using arch::cuda::bf16_bits_to_float;
using arch::cuda::bits_float;
using arch::cuda::float_bits;
using arch::cuda::float_to_bf16_bits;
using arch::cuda::float_to_bf16_bits_stochastic;

std::vector<std::uint16_t> codec_bf16(const std::vector<float>& x) {
    auto codec = arch::compression::make_codec("bf16");
    const std::vector<std::byte> bytes = codec->encode(std::span<const float>(x));
    REQUIRE(bytes.size() == arch::compression::kWireHeaderBytes + 2 * x.size());
    std::vector<std::uint16_t> out(x.size());
    std::memcpy(out.data(), bytes.data() + arch::compression::kWireHeaderBytes, 2 * x.size());
    return out;
}

bool is_finite_bits(std::uint32_t u) {
    return (u & 0x7f800000u) != 0x7f800000u;
}

// The bf16 neighbours of finite f in magnitude: truncated toward zero, and the next one up.
std::uint16_t truncated(float f) {
    return static_cast<std::uint16_t>(float_bits(f) >> 16);
}

}  // namespace

TEST_CASE("float_to_bf16_bits matches the bytes of compression's bf16 codec", "[bf16_math]") {
    std::vector<std::uint32_t> patterns = {
        0x00000000u, 0x80000000u,                            // +-0
        0x3f800000u, 0xbf800000u,                            // +-1
        0x3f808000u, 0x3f818000u, 0xbf808000u, 0xbf818000u,  // ties: to even down, to even up
        0x3f807fffu, 0x3f808001u, 0x3f80ffffu,               // just below / above a tie, carry
        0x3fffffffu, 0x407fffffu, 0x3f7f8000u,               // carries into the exponent
        0x00000001u, 0x00007fffu, 0x00008000u, 0x00018000u,  // subnormals, ties among them
        0x007fffffu, 0x807fffffu, 0x00800000u, 0x007f8000u,  // largest subnormal, smallest normal
        0x7f7f0000u, 0x7f7f7fffu, 0x7f7f8000u, 0x7f7fffffu,  // near and at the largest float
        0xff7f8000u, 0xff7fffffu, 0x7f7effffu, 0x7f7e8000u,
    };
    std::mt19937 rng(1234);
    for (int i = 0; i < 200000; ++i) {
        const std::uint32_t u = rng();
        if (is_finite_bits(u)) patterns.push_back(u);
    }
    std::vector<float> x;
    for (std::uint32_t u : patterns) x.push_back(bits_float(u));
    const std::vector<std::uint16_t> expected = codec_bf16(x);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (float_to_bf16_bits(x[i]) != expected[i]) {
            if (++mismatches <= 10) {
                INFO("input bits 0x" << std::hex << patterns[i] << " -> 0x"
                                     << float_to_bf16_bits(x[i]) << ", codec 0x" << expected[i]);
                CHECK(false);
            }
        }
    }
    CHECK(mismatches == 0);
    // Spot checks with known answers.
    CHECK(float_to_bf16_bits(bits_float(0x3f808000u)) == 0x3f80);  // tie, even below
    CHECK(float_to_bf16_bits(bits_float(0x3f818000u)) == 0x3f82);  // tie, even above
    CHECK(float_to_bf16_bits(-0.0f) == 0x8000);
    CHECK(float_to_bf16_bits(bits_float(0x7f7fffffu)) == 0x7f7f);  // saturates like the codec
}

TEST_CASE("bf16 bits round-trip exactly; NaN and inf are kept", "[bf16_math]") {
    for (std::uint32_t b = 0; b < 0x10000u; ++b) {
        const float f = bf16_bits_to_float(static_cast<std::uint16_t>(b));
        CHECK(float_bits(f) == b << 16);
        if (std::isnan(f)) {
            CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(f))));
        } else {
            REQUIRE(float_to_bf16_bits(f) == b);
        }
    }
    CHECK(float_to_bf16_bits(INFINITY) == 0x7f80);
    CHECK(float_to_bf16_bits(-INFINITY) == 0xff80);
    CHECK(std::isnan(
        bf16_bits_to_float(float_to_bf16_bits(bits_float(0x7f800001u)))));  // low-bit NaN
    CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
    CHECK(float_to_bf16_bits_stochastic(INFINITY, 1, 2) == 0x7f80);
    CHECK(std::isnan(
        bf16_bits_to_float(float_to_bf16_bits_stochastic(bits_float(0xff800001u), 1, 2))));
}

TEST_CASE("stochastic rounding lands on a neighbour, keeps exact values, is deterministic",
          "[bf16_math]") {
    std::mt19937 rng(99);
    for (int i = 0; i < 100000; ++i) {
        const std::uint32_t u = rng();
        if (!is_finite_bits(u)) continue;
        const float f = bits_float(u);
        const std::uint64_t seed = rng(), index = rng();
        const std::uint16_t r = float_to_bf16_bits_stochastic(f, seed, index);
        const std::uint16_t lo = truncated(f);
        const bool at_max = (lo & 0x7fffu) == 0x7f7fu;  // rounding up would overflow: saturates
        REQUIRE((r == lo || (r == lo + 1 && !at_max)));
        REQUIRE(r == float_to_bf16_bits_stochastic(f, seed, index));
        if ((u & 0xffffu) == 0) REQUIRE(r == lo);
    }
    // Representable values, every index: exact.
    for (std::uint32_t b : {0x0000u, 0x8000u, 0x3f80u, 0xbf81u, 0x0001u, 0x7f7fu, 0xff7fu}) {
        const float f = bf16_bits_to_float(static_cast<std::uint16_t>(b));
        for (std::uint64_t i = 0; i < 1000; ++i)
            REQUIRE(float_to_bf16_bits_stochastic(f, 7, i) == b);
    }
    // Different seeds or indices give different roundings (not a constant choice).
    const float half = bits_float(0x3f808000u);
    int ups_seed = 0, ups_index = 0;
    for (std::uint64_t s = 0; s < 1000; ++s)
        ups_seed += float_to_bf16_bits_stochastic(half, s, 5) == 0x3f81;
    for (std::uint64_t i = 0; i < 1000; ++i)
        ups_index += float_to_bf16_bits_stochastic(half, 5, i) == 0x3f81;
    CHECK(ups_seed > 400);
    CHECK(ups_seed < 600);
    CHECK(ups_index > 400);
    CHECK(ups_index < 600);
}

TEST_CASE("stochastic rounding is unbiased", "[bf16_math]") {
    // Mean over n = 100k indices of the rounded value against the input. A single draw rounds up
    // with probability p (the fractional distance), so the mean of the up-indicator has standard
    // deviation sqrt(p(1-p)/n) <= 0.0016; we allow 5 of them (0.008) in units of the bf16 spacing.
    constexpr int n = 100000;
    const float tolerance_ulps = 5.0f * 0.5f / std::sqrt(static_cast<float>(n));
    struct Case {
        std::uint32_t hi;    // the truncated bf16 bits (as the top half of the float)
        std::uint32_t frac;  // the 16 dropped bits
    };
    const Case cases[] = {
        {0x3f80u, 0x0001u}, {0x3f80u, 0x0290u}, {0x3f80u, 0x4000u},
        {0x3f80u, 0x8000u}, {0x3f80u, 0xc000u}, {0x3f80u, 0xfd00u},
        {0xbf80u, 0x5555u}, {0x3fffu, 0x9999u},  // crosses into the next binade
        {0x0000u, 0x3333u},                      // subnormal
        {0xc2c8u, 0xe000u}, {0x3a83u, 0x1234u},
    };
    for (const Case& c : cases) {
        const float f = bits_float((c.hi << 16) | c.frac);
        const double lo = bf16_bits_to_float(static_cast<std::uint16_t>(c.hi));
        const double up = bf16_bits_to_float(static_cast<std::uint16_t>(c.hi + 1));
        const double spacing = std::fabs(up - lo);
        for (std::uint64_t seed : {0ull, 42ull, 0xdeadbeefcafeull}) {
            double sum = 0.0;
            for (int i = 0; i < n; ++i)
                sum += bf16_bits_to_float(float_to_bf16_bits_stochastic(f, seed, i));
            const double mean = sum / n;
            INFO("bits 0x" << std::hex << ((c.hi << 16) | c.frac) << std::dec << " seed " << seed
                           << " mean " << mean << " input " << f);
            CHECK(std::fabs(mean - static_cast<double>(f)) / spacing <= tolerance_ulps);
        }
    }
}

TEST_CASE("GELU (tanh) and its derivative", "[bf16_math]") {
    auto gelu_ref = [](double x) {
        return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    };
    for (double x = -8.0; x <= 8.0; x += 0.01) {
        const float xf = static_cast<float>(x);
        const double xd = xf;
        // Forward against the double formula: fp32 rounding only.
        CHECK(std::fabs(arch::cuda::gelu_tanh(xf) - gelu_ref(xd)) <=
              1e-6 + 1e-6 * std::fabs(gelu_ref(xd)));
        // Derivative against a central difference of the double formula (truncation error ~h^2).
        const double h = 1e-4;
        const double fd = (gelu_ref(xd + h) - gelu_ref(xd - h)) / (2 * h);
        CHECK(std::fabs(arch::cuda::gelu_tanh_grad(xf) - fd) <= 1e-5 + 1e-5 * std::fabs(fd));
        // And against a central difference of the fp32 forward itself (rounding noise ~1e-7/h).
        const float hf = 1e-2f;
        const float fdf =
            (arch::cuda::gelu_tanh(xf + hf) - arch::cuda::gelu_tanh(xf - hf)) / (2 * hf);
        CHECK(std::fabs(arch::cuda::gelu_tanh_grad(xf) - fdf) <= 1e-3f);
    }
    CHECK(arch::cuda::gelu_tanh(0.0f) == 0.0f);
    CHECK(arch::cuda::gelu_tanh_grad(0.0f) == 0.5f);
}
