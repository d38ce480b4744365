// tests/compression/test_codec_rejects.cpp: corrupt, truncated, oversized and lying-header buffers
// are rejected with arch::Error and leave the output untouched; random mutations never crash (run
// under ASan+UBSan in `make test-asan`; the libFuzzer targets in tests/fuzz go further).
#include <catch2/catch.hpp>

#include <zstd.h>

#include <cmath>
#include <cstring>
#include <random>

#include "compression/codec.h"
#include "core/error.h"
#include "tests/compression/codec_test_data.h"

using namespace arch::compression;
using arch::compression::testing::gaussian;

namespace {

const char* const kSpecs[] = {"fp32", "fp16", "bf16", "int8:block=64", "uint8", "int4:block=32",
                              "fp4:block=32", "topk:frac=0.1", "sign:block=64", "int8+zstd",
                              "topk:frac=0.1+zstd:3", "fp32+zstd"};

template <class T>
void poke(std::vector<std::byte>& b, std::size_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof v);
}
template <class T>
T peek(const std::vector<std::byte>& b, std::size_t at) {
    T v;
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}

// decode must throw arch::Error mentioning `says` and leave out untouched.
void require_rejected(const std::vector<std::byte>& bytes, std::size_t n, const char* says = "") {
    std::vector<float> out(n, 42.0f);
    REQUIRE_THROWS_AS(decode(bytes, out), arch::Error);
    REQUIRE_THROWS_WITH(decode(bytes, out), Catch::Contains(says));
    for (float v : out) REQUIRE(v == 42.0f);
}

}  // namespace

TEST_CASE("truncated and oversized buffers are rejected", "[codec][reject]") {
    const auto x = gaussian(1000, 1);
    for (const char* spec : kSpecs) {
        INFO(spec);
        const auto bytes = make_codec(spec)->encode(x);
        for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{39}, std::size_t{40},
                                std::size_t{41}, bytes.size() / 2, bytes.size() - 1}) {
            require_rejected(std::vector<std::byte>(bytes.begin(), bytes.begin() + len), x.size());
        }
        auto longer = bytes;
        longer.push_back(std::byte{0});
        require_rejected(longer, x.size(), "body bytes");
    }
}

TEST_CASE("lying headers are rejected", "[codec][reject]") {
    const auto x = gaussian(1000, 2);
    for (const char* spec : kSpecs) {
        INFO(spec);
        const auto good = make_codec(spec)->encode(x);
        auto b = good;
        b[0] = std::byte{'X'};
        require_rejected(b, x.size(), "magic");
        b = good;
        b[4] = std::byte{2};
        require_rejected(b, x.size(), "version");
        b = good;
        b[5] = std::byte{0};
        require_rejected(b, x.size(), "unknown codec");
        b = good;
        b[5] = std::byte{77};
        require_rejected(b, x.size(), "unknown codec");
        b = good;
        b[6] = std::byte{0x80};
        require_rejected(b, x.size(), "flags");
        b = good;
        b[21] = std::byte{1};
        require_rejected(b, x.size(), "reserved");
        // count that disagrees with the destination, and counts that disagree with the payload
        std::vector<float> wrong(x.size() + 1);
        REQUIRE_THROWS_WITH(decode(good, wrong), Catch::Contains("destination expects"));
        for (std::uint64_t count : {std::uint64_t{999}, std::uint64_t{1001}, std::uint64_t{1} << 50,
                                    ~std::uint64_t{0}}) {
            b = good;
            poke<std::uint64_t>(b, 8, count);
            std::vector<float> out(999);
            if (count == 999) {
                if (std::string(spec).starts_with("topk")) continue;  // topk payload may still fit 999
                REQUIRE_THROWS_AS(decode(b, out), arch::Error);
            } else {
                require_rejected(b, x.size());
            }
        }
        // block size changes the payload size, or is out of range
        for (std::uint32_t block : {0u, 7u, 16u, 1u << 30}) {
            b = good;
            if (peek<std::uint32_t>(good, 16) == block) continue;
            poke<std::uint32_t>(b, 16, block);
            require_rejected(b, x.size());
        }
        // payload and body sizes that lie
        for (std::int64_t d : {-1, 1, 1 << 20}) {
            b = good;
            poke<std::uint64_t>(b, 24, peek<std::uint64_t>(good, 24) + d);
            require_rejected(b, x.size());
            b = good;
            poke<std::uint64_t>(b, 32, peek<std::uint64_t>(good, 32) + d);
            require_rejected(b, x.size());
        }
        // another codec id with the same sizes must still not decode silently to garbage sizes
        b = good;
        b[6] = b[6] ^ std::byte{1};  // toggle the zstd flag
        require_rejected(b, x.size());
    }
}

TEST_CASE("corrupt payload fields are rejected before anything is written", "[codec][reject]") {
    const auto x = gaussian(1000, 3);
    const std::uint32_t nan_bits = 0x7fc00000u, inf_bits = 0x7f800000u;
    auto b = make_codec("fp32")->encode(x);
    poke(b, 40 + 4 * 999, inf_bits);
    require_rejected(b, x.size(), "not finite");
    b = make_codec("fp16")->encode(x);
    poke<std::uint16_t>(b, 40 + 2 * 500, 0x7c00);
    require_rejected(b, x.size(), "fp16 value 500");
    b = make_codec("bf16")->encode(x);
    poke<std::uint16_t>(b, 40 + 2 * 7, 0xff81);
    require_rejected(b, x.size(), "bf16 value 7");
    for (const char* spec : {"int8:block=64", "int4:block=64", "fp4:block=64", "sign:block=64"}) {
        INFO(spec);
        b = make_codec(spec)->encode(x);
        poke(b, 40 + 4 * 3, nan_bits);
        require_rejected(b, x.size(), "block 3 has scale");
        b = make_codec(spec)->encode(x);
        poke(b, 40 + 4 * 15, -1.0f);
        require_rejected(b, x.size(), "block 15");
    }
    b = make_codec("int4:block=64")->encode(std::vector<float>(x.begin(), x.begin() + 999));
    b.back() = b.back() | std::byte{0x10};
    require_rejected(b, 999, "padding");
    b = make_codec("uint8")->encode(x);
    poke(b, 40 + 4 * 200, inf_bits);
    require_rejected(b, x.size(), "codebook entry 200");

    // topk: k > n, out-of-range index, truncated varint, trailing bytes, non-finite value
    const auto t = make_codec("topk:frac=0.01")->encode(x);  // k = 10
    b = t;
    poke<std::uint64_t>(b, 40, 1001);
    require_rejected(b, x.size(), "keeps 1001");
    b = t;
    poke(b, 48, nan_bits);
    require_rejected(b, x.size(), "topk value 0");
    b = t;  // last gap made huge
    b.back() = std::byte{0x7f};
    b.insert(b.end() - 1, std::byte{0xff});
    poke<std::uint64_t>(b, 24, peek<std::uint64_t>(b, 24) + 1);
    poke<std::uint64_t>(b, 32, peek<std::uint64_t>(b, 32) + 1);
    require_rejected(b, x.size(), "out of range");
    b = t;  // last varint left unterminated
    b.back() = std::byte{0x81};
    require_rejected(b, x.size(), "truncated");
    b = t;  // one trailing byte inside the payload
    b.push_back(std::byte{0});
    poke<std::uint64_t>(b, 24, peek<std::uint64_t>(b, 24) + 1);
    poke<std::uint64_t>(b, 32, peek<std::uint64_t>(b, 32) + 1);
    require_rejected(b, x.size(), "trailing");
}

TEST_CASE("zstd frames that would expand beyond the declared size are rejected", "[codec][reject][zstd]") {
    // A valid fp32 header for 4 floats (16 payload bytes) whose single chunk is a zstd frame of
    // 1 MiB of zeros: its declared content size disagrees with the 16 bytes the header allows.
    std::vector<std::byte> zeros(1 << 20, std::byte{0});
    std::vector<std::byte> frame(ZSTD_compressBound(zeros.size()));
    frame.resize(ZSTD_compress(frame.data(), frame.size(), zeros.data(), zeros.size(), 1));
    const auto good = make_codec("fp32+zstd")->encode(std::vector<float>{1, 2, 3, 4});
    std::vector<std::byte> b(good.begin(), good.begin() + 40);
    const std::uint32_t chunk = 1u << 20, chunks = 1, stored = static_cast<std::uint32_t>(frame.size());
    b.resize(40 + 12);
    poke(b, 40, chunk);
    poke(b, 44, chunks);
    poke(b, 48, stored);
    b.insert(b.end(), frame.begin(), frame.end());
    poke<std::uint64_t>(b, 32, b.size() - 40);
    require_rejected(b, 4, "frame declares 1048576 bytes, expected 16");

    // A frame without a content size, and garbage that is not a frame at all.
    auto g = make_codec("fp32+zstd")->encode(std::vector<float>(5000, 1.0f));
    REQUIRE((peek<std::uint32_t>(g, 48) & 0x80000000u) == 0);  // compressed, not raw
    g[52 + 4] = std::byte{0xff};                                // frame header descriptor
    require_rejected(g, 5000);
    // chunk table that disagrees with the payload size
    g = make_codec("fp32+zstd")->encode(std::vector<float>(5000, 1.0f));
    poke<std::uint32_t>(g, 40, 16);
    require_rejected(g, 5000, "chunks");
    g = make_codec("fp32+zstd")->encode(std::vector<float>(5000, 1.0f));
    poke<std::uint32_t>(g, 48, peek<std::uint32_t>(g, 48) + 1);
    require_rejected(g, 5000);
}

TEST_CASE("the allocating decode refuses counts above its limit", "[codec][reject]") {
    const auto b = make_codec("int8")->encode(gaussian(1000, 4));
    REQUIRE(decode(b, 1000).size() == 1000);
    REQUIRE_THROWS_WITH(decode(b, 999), Catch::Contains("more than the 999 allowed"));
}

TEST_CASE("random mutations are rejected or decode to finite floats, never crash", "[codec][reject]") {
    const auto x = gaussian(300, 5);
    std::mt19937 rng(99);
    for (const char* spec : kSpecs) {
        INFO(spec);
        const auto good = make_codec(spec)->encode(x);
        for (int trial = 0; trial < 300; ++trial) {
            auto b = good;
            const int flips = 1 + trial % 4;
            for (int f = 0; f < flips; ++f) {
                b[rng() % b.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
            }
            if (trial % 10 == 0) b.resize(rng() % (b.size() + 8));
            std::vector<float> out(x.size());
            try {
                decode(b, out);
                for (float v : out) REQUIRE(std::isfinite(v));
            } catch (const arch::Error&) {
            }
        }
    }
}
