// tests/cuda/test_codec_math.cpp: the device codecs' math (kernels/cuda/codec_math.h), run on the
// CPU: host loops shaped like the kernels of device_codec.cu build whole payloads that must be the
// bytes of compression's int8 / int4 / fp4 encoders, and dequantize to compression::decode's bits.
// Also the compression API the device codecs stand on (wrap_payload, open_payload). Needs no GPU.
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compression/codec.h"
#include "core/error.h"
#include "kernels/cuda/codec_math.h"
#include "tests/compression/codec_test_data.h"

using namespace arch::cuda::codec_math;
using arch::cuda::bits_float;
using arch::cuda::float_bits;
using arch::compression::testing::adversarial_inputs;
using arch::compression::testing::gaussian;
namespace compression = arch::compression;

namespace {

const char* name_of(Quant q) {
    return q == Quant::int8 ? "int8" : q == Quant::int4 ? "int4" : "fp4";
}

std::string spec_of(Quant q, std::uint32_t block, bool zstd = false) {
    return std::string(name_of(q)) + ":block=" + std::to_string(block) + (zstd ? "+zstd:3" : "");
}

// The payload as device_codec.cu makes it: absmax bits per block (any order), scales, code bytes.
// Returns false (payload unfinished) if x holds inf/NaN, as the kernels' flag would say.
bool host_payload(Quant q, const std::vector<float>& x, std::uint32_t block,
                  std::vector<std::byte>& payload) {
    const std::uint64_t n = x.size(), nb = blocks_of(n, block);
    payload.assign(payload_bytes(q, n, block), std::byte{0});
    std::vector<std::uint32_t> absmax(nb, 0);
    bool finite = true;
    for (std::uint64_t i = n; i-- > 0;) {  // reversed: the order must not matter
        const std::uint32_t a = abs_bits(x[i]);
        finite = finite && a < kInfBits;
        absmax[i / block] = std::max(absmax[i / block], a);
    }
    if (!finite) return false;
    std::vector<float> scales(nb);
    for (std::uint64_t b = 0; b < nb; ++b) scales[b] = scale_of(q, bits_float(absmax[b]));
    if (nb > 0) std::memcpy(payload.data(), scales.data(), 4 * nb);
    auto* codes = reinterpret_cast<std::uint8_t*>(payload.data() + 4 * nb);
    for (std::uint64_t j = 0; j < code_bytes(q, n); ++j) {
        codes[j] = code_byte(q, x.data(), n, j, scales[block_of_byte(q, j, block)]);
    }
    return true;
}

// dequantize_kernel on the host.
std::vector<float> host_dequantize(Quant q, std::span<const std::byte> payload, std::uint64_t n,
                                   std::uint32_t block) {
    const std::uint64_t nb = blocks_of(n, block);
    std::vector<float> scales(nb), out(n, -777.0f);
    if (nb > 0) std::memcpy(scales.data(), payload.data(), 4 * nb);
    const auto* codes = reinterpret_cast<const std::uint8_t*>(payload.data() + 4 * nb);
    for (std::uint64_t j = 0; j < code_bytes(q, n); ++j) {
        decode_byte(q, codes[j], scales[block_of_byte(q, j, block)], j, n, out.data());
    }
    return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), 4 * a.size()) == 0);
}

// First index where two byte strings differ (or the shorter size), for failure messages.
std::size_t first_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return i;
}

// encode on the "device" path == compression's encode, and decode == compression::decode, bit for
// bit.
void check_same(Quant q, const std::vector<float>& x, std::uint32_t block,
                const std::string& what) {
    INFO(what << ": " << spec_of(q, block) << ", n = " << x.size());
    std::vector<std::byte> payload;
    REQUIRE(host_payload(q, x, block, payload));
    for (bool zstd : {false, true}) {
        const std::string spec = spec_of(q, block, zstd);
        const std::vector<std::byte> cpu = compression::make_codec(spec)->encode(x);
        const std::vector<std::byte> mine = compression::wrap_payload(spec, x.size(), payload);
        INFO("zstd " << zstd << ", first differing byte " << first_difference(cpu, mine) << " of "
                     << cpu.size());
        REQUIRE(cpu == mine);
        std::vector<float> decoded(x.size());
        compression::decode(cpu, decoded);
        const compression::Payload p = compression::open_payload(cpu, x.size());
        REQUIRE(std::vector<std::byte>(p.bytes().begin(), p.bytes().end()) == payload);
        REQUIRE(same_bits(host_dequantize(q, p.bytes(), x.size(), block), decoded));
    }
}

// Inputs aimed at each rounding rule of blockwise.cpp, for one codec.
std::vector<std::pair<std::string, std::vector<float>>> rounding_inputs(Quant q) {
    std::vector<std::pair<std::string, std::vector<float>>> sets;
    const float qmax = q == Quant::int8 ? 127.0f : q == Quant::int4 ? 7.0f : 6.0f;
    // Scale exactly 1 (absmax = qmax): x/s is x itself, so halves are exact ties.
    std::vector<float> ties{qmax};
    for (float v = -qmax; v <= qmax; v += 0.25f) ties.push_back(v);
    for (float t :
         {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) {  // e2m1 midpoints and neighbours
        for (float v : {t, std::nextafter(t, 0.0f), std::nextafter(t, 10.0f)}) {
            ties.push_back(v);
            ties.push_back(-v);
        }
    }
    sets.emplace_back("ties at scale 1", ties);
    // Scale 1/qmax*2^k for a spread of k: ties after a multiplication by an inexact 1/s.
    std::vector<float> scaled;
    for (int k = -30; k <= 30; k += 7) {
        const float m = std::ldexp(1.0f, k);
        scaled.push_back(qmax * m);
        for (float v = -qmax; v <= qmax; v += 0.5f) scaled.push_back(v * m);
        while (scaled.size() % 16 != 0) scaled.push_back(0.0f);
    }
    sets.emplace_back("ties at powers of two", scaled);
    // Subnormal scales: absmax of a few hundred ulps of FLT_TRUE_MIN, so x/s runs in double.
    std::vector<float> sub;
    for (int a : {1, 63, 64, 100, 190, 254, 381, 762, 1000, 5000}) {
        const float absmax = a * FLT_TRUE_MIN;
        sub.push_back(absmax);
        for (int k = -a; k <= a; k += std::max(1, a / 9)) sub.push_back(k * FLT_TRUE_MIN);
        sub.push_back(-0.0f);
        while (sub.size() % 8 != 0) sub.push_back(3 * FLT_TRUE_MIN);
    }
    sets.emplace_back("subnormal scales", sub);
    // Normal scale, subnormal values in the same block; the smallest normal scale.
    std::vector<float> mixed{1.0f, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1e-40f, -1e-39f, 0.0f, -0.0f, 0.5f};
    std::vector<float> edge{qmax * FLT_MIN, FLT_MIN, -FLT_MIN, 0.5f * FLT_MIN,
                            FLT_MIN / qmax, 0.0f,    1e-45f,   -3e-39f};
    mixed.insert(mixed.end(), edge.begin(), edge.end());
    sets.emplace_back("normal and subnormal", mixed);
    // Near FLT_MAX: scales of a few 1e37, and the largest products on decode.
    std::vector<float> huge{FLT_MAX,     -FLT_MAX,     std::nextafter(FLT_MAX, 0.0f),
                            FLT_MAX / 2, -FLT_MAX / 3, 1e38f,
                            1.0f,        0.0f};
    sets.emplace_back("near FLT_MAX", huge);
    // One non-zero per block of 8 (and blocks of only zeros, +0 and -0).
    std::vector<float> single(64, 0.0f);
    single[3] = -2.5f, single[17] = 1e-3f, single[40] = -0.0f, single[63] = 7.0f;
    sets.emplace_back("single non-zero", single);
    // Values over the whole exponent range, in random order.
    std::mt19937 rng(42);
    std::normal_distribution<float> g;
    std::uniform_int_distribution<int> e(-149, 126);
    std::vector<float> wild(5003);
    for (float& v : wild) v = std::ldexp(g(rng), e(rng));
    sets.emplace_back("all magnitudes", wild);
    return sets;
}

const Quant kQuants[] = {Quant::int8, Quant::int4, Quant::fp4};

}  // namespace

TEST_CASE("codec_math payloads are compression's bytes on Gaussian data", "[codec_math]") {
    for (Quant q : kQuants) {
        for (std::uint32_t block : {8u, 24u, 128u, 256u, 4096u}) {
            for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000},
                                  std::size_t{4099}, std::size_t{(1 << 16) + 13}}) {
                check_same(q, gaussian(n, static_cast<std::uint32_t>(n + block), 0.01f), block,
                           "gaussian");
            }
        }
    }
}

TEST_CASE("codec_math payloads are compression's bytes on adversarial data", "[codec_math]") {
    for (Quant q : kQuants) {
        for (std::uint32_t block : {8u, 16u, 128u, 1024u}) {
            for (const auto& [what, x] : adversarial_inputs()) check_same(q, x, block, what);
            for (const auto& [what, x] : rounding_inputs(q)) check_same(q, x, block, what);
        }
    }
}

TEST_CASE("codec_math ties round as the CPU does", "[codec_math]") {
    // Spot values, independent of compression: scale 1 for int8 (absmax 127) and fp4 (absmax 6).
    REQUIRE(quantize_uniform(2.5f, 1.0f, 127.0f) == 2);
    REQUIRE(quantize_uniform(3.5f, 1.0f, 127.0f) == 4);
    REQUIRE(quantize_uniform(-0.5f, 1.0f, 127.0f) == 0);
    REQUIRE(quantize_uniform(200.0f, 1.0f, 127.0f) == 127);
    REQUIRE(quantize_uniform(3 * FLT_TRUE_MIN, 2 * FLT_TRUE_MIN, 7.0f) == 2);  // 1.5 in double -> 2
    REQUIRE(quantize_uniform(5 * FLT_TRUE_MIN, 2 * FLT_TRUE_MIN, 7.0f) == 2);  // 2.5 -> 2
    REQUIRE(quantize_uniform(1.0f, 0.0f, 7.0f) == 0);
    REQUIRE(fp4_code(0.25f, 1.0f) == 0);
    REQUIRE(fp4_code(0.2500001f, 1.0f) == 1);
    REQUIRE(fp4_code(-5.0f, 1.0f) == (6 | 8));
    REQUIRE(fp4_code(-0.1f, 1.0f) == 8);    // a negative that rounds to 0 keeps its sign
    REQUIRE(fp4_code(-1e-45f, 0.0f) == 0);  // a zero scale gives +0
    REQUIRE(std::signbit(e2m1_value(8)));
    REQUIRE(abs_bits(std::nanf("")) >= kInfBits);
    REQUIRE(abs_bits(-INFINITY) >= kInfBits);
    REQUIRE(abs_bits(-FLT_MAX) < kInfBits);
}

TEST_CASE("codec_math flags the non-finite inputs the CPU codecs reject", "[codec_math]") {
    for (Quant q : kQuants) {
        for (float bad : {NAN, INFINITY, -INFINITY}) {
            std::vector<float> x = gaussian(300, 3);
            x[123] = bad;
            std::vector<std::byte> payload;
            REQUIRE_FALSE(host_payload(q, x, 128, payload));
            REQUIRE_THROWS_AS(compression::make_codec(spec_of(q, 128))->encode(x), arch::Error);
        }
    }
}

TEST_CASE("codec_math dequantizes any valid payload to compression::decode's bits",
          "[codec_math]") {
    // Random codes (every int4 nibble, 0 = -8 included) under scales from 0 and subnormal to
    // FLT_MAX, where products overflow and clamp to +-FLT_MAX; -0 scales too.
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> byte(0, 255);
    const float scales[] = {0.0f,  -0.0f, FLT_TRUE_MIN, 1e-40f,      FLT_MIN,
                            1e-3f, 1.0f,  3e37f,        FLT_MAX / 2, FLT_MAX};
    for (Quant q : kQuants) {
        for (std::uint64_t n : {1ull, 8ull, 999ull, 1000ull}) {
            const std::uint32_t block = 8;
            std::vector<std::byte> payload(payload_bytes(q, n, block));
            const std::uint64_t nb = blocks_of(n, block);
            for (std::uint64_t b = 0; b < nb; ++b)
                std::memcpy(payload.data() + 4 * b, &scales[b % 10], 4);
            for (std::size_t j = 4 * nb; j < payload.size(); ++j) payload[j] = std::byte(byte(rng));
            if (q != Quant::int8 && (n & 1)) payload.back() &= std::byte{15};  // padding nibble 0
            const std::string spec = spec_of(q, block);
            const std::vector<std::byte> bytes = compression::wrap_payload(spec, n, payload);
            std::vector<float> cpu(n);
            compression::decode(bytes, cpu);
            INFO(spec << ", n = " << n);
            REQUIRE(same_bits(host_dequantize(q, payload, n, block), cpu));
        }
    }
}

TEST_CASE("wrap_payload and open_payload hold to the CPU codec's checks", "[codec_math]") {
    const std::vector<float> x = gaussian(1001, 5);
    const std::vector<std::byte> good = compression::make_codec("int4:block=64")->encode(x);
    std::vector<std::byte> payload;
    REQUIRE(host_payload(Quant::int4, x, 64, payload));

    SECTION("wrap_payload refuses +ef, bad specs and wrong sizes") {
        REQUIRE_THROWS_AS(compression::wrap_payload("int4:block=64+ef", x.size(), payload),
                          arch::Error);
        REQUIRE_THROWS_AS(compression::wrap_payload("int4:block=7", x.size(), payload),
                          arch::Error);
        REQUIRE_THROWS_AS(compression::wrap_payload("int4:block=64", x.size() + 2, payload),
                          arch::Error);
        std::vector<std::byte> shorter(payload.begin(), payload.end() - 1);
        REQUIRE_THROWS_AS(compression::wrap_payload("int4:block=64", x.size(), shorter),
                          arch::Error);
    }
    SECTION("open_payload rejects what decode rejects, with decode's message") {
        auto same_rejection = [&](const std::vector<std::byte>& bytes, std::uint64_t count) {
            std::string cpu, mine;
            std::vector<float> out(count, 1.0f);
            try {
                compression::decode(bytes, out);
            } catch (const arch::Error& e) {
                cpu = e.what();
            }
            try {
                compression::open_payload(bytes, count);
            } catch (const arch::Error& e) {
                mine = e.what();
            }
            INFO(cpu);
            REQUIRE(!cpu.empty());
            REQUIRE(cpu == mine);
        };
        std::vector<std::byte> bad = good;
        const float nan = NAN, negative = -1.0f;
        std::memcpy(bad.data() + compression::kWireHeaderBytes + 4 * 3, &nan, 4);
        same_rejection(bad, x.size());
        std::memcpy(bad.data() + compression::kWireHeaderBytes + 4 * 3, &negative, 4);
        same_rejection(bad, x.size());
        bad = good;
        bad.back() |= std::byte{0x10};  // n is odd: the last high nibble is padding
        same_rejection(bad, x.size());
        same_rejection(good, x.size() - 1);
        same_rejection(std::vector<std::byte>(good.begin(), good.end() - 1), x.size());
        bad = good;
        bad[0] = std::byte{'X'};
        same_rejection(bad, x.size());
        std::vector<std::byte> zstd = compression::make_codec("int4:block=64+zstd")->encode(x);
        zstd[compression::kWireHeaderBytes + 8] ^=
            std::byte{0x40};  // the first chunk's stored size
        same_rejection(zstd, x.size());
    }
}
