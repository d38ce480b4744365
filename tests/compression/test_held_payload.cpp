// tests/compression/test_held_payload.cpp: HeldPayload, a buffer decoded a slice at a time: for every
// codec, with and without zstd, on sizes that leave a short last block, every slice (of sizes that
// are multiples of the codec's alignment, and the odd tail) decodes bit for bit to what decode()
// gives for those positions; a misaligned or overlong slice and a corrupt buffer are refused; error
// feedback, which subtracts its decode a slice at a time, leaves exactly x + r - decode(encode(x + r));
// a payload put in an earlier one's memory (release_buffer) decodes the same, in that memory; topk
// slices start from marks into its index list, wherever the slice lies; a blockwise payload held in
// its zstd frames (Keep::frames) gives the same slices and is refused whole when a frame is corrupt.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "compression/codec.h"
#include "compression/held_payload.h"
#include "core/error.h"
#include "tests/compression/codec_test_data.h"

using namespace arch;
using namespace arch::compression;

TEST_CASE("every slice of a held payload decodes to the floats decode() gives there") {
    const char* specs[] = {"fp32", "fp16", "bf16", "int8:block=256", "uint8", "int4:block=64", "fp4:block=32",
                           "topk:frac=0.05", "sign:block=128", "int8:block=256+zstd:1", "fp4:block=32+zstd:1",
                           "topk:frac=0.05+zstd:1", "uint8+zstd:3"};
    std::mt19937 rng(5);
    for (const char* spec : specs) {
        for (const std::size_t n : {std::size_t{1}, std::size_t{4099}, std::size_t{70001}}) {
            INFO(spec << ", " << n << " values");
            const std::vector<float> x = testing::gaussian(n, static_cast<std::uint32_t>(n));
            const std::vector<std::byte> bytes = make_codec(spec)->encode(x);
            std::vector<float> whole(n);
            decode(bytes, whole);
            const HeldPayload held(bytes, n);
            REQUIRE(held.count() == n);
            const std::uint64_t align = held.alignment();
            std::vector<float> sliced(n);
            for (std::uint64_t first = 0; first < n;) {  // random slice lengths, each a multiple of the alignment
                const std::uint64_t len = std::min<std::uint64_t>(n - first, align * (1 + rng() % 40));
                held.decode(first, std::span(sliced).subspan(first, len));
                first += len;
            }
            CHECK(std::memcmp(sliced.data(), whole.data(), n * sizeof(float)) == 0);
            // The bound read from the scales holds every decoded value, and is not loose by more than
            // a code's range (within 128 × for int8; infinite only where a codec has no scales).
            float most = 0.0f;
            for (const float v : whole) most = std::max(most, std::fabs(v));
            const float bound = held.magnitude_bound();
            CHECK(bound >= most);
            const std::string name(spec);
            if (name.rfind("fp", 0) == 0 && name.rfind("fp4", 0) != 0) CHECK(std::isinf(bound));
            else if (name.rfind("bf16", 0) == 0) CHECK(std::isinf(bound));
            else if (name.rfind("uint8", 0) != 0) CHECK(bound <= 128.0f * most + 1e-30f);  // uint8: its codebook's reach
            if (align > 1 && n > align) CHECK_THROWS_AS(held.decode(align / 2, std::span(sliced).first(8)), Error);
            if (n >= 2) CHECK_THROWS_AS(held.decode(n - 1, std::span(sliced).first(2)), Error);  // past the end
        }
    }
}

TEST_CASE("a held payload put in an earlier one's memory decodes the same, and takes no fresh memory") {
    // A buffer kept from one round's payload to the next's (the host's held Δs, a peer's update).
    for (const char* spec : {"fp4:block=32+zstd:1", "int8:block=256+zstd:1", "int8:block=256", "topk:frac=0.05+zstd:1"}) {
        INFO(spec);
        const std::size_t n = 70001;
        std::vector<std::byte> memory;
        const std::byte* first_memory = nullptr;
        for (std::uint32_t round = 0; round < 3; ++round) {
            const std::vector<float> x = testing::gaussian(n, 11 + round);
            const std::vector<std::byte> bytes = make_codec(spec)->encode(x);
            std::vector<float> whole(n), sliced(n);
            decode(bytes, whole);
            HeldPayload held(bytes, n, HeldPayload::Keep::copy, std::move(memory));
            held.decode(0, sliced);
            CHECK(std::memcmp(sliced.data(), whole.data(), n * sizeof(float)) == 0);
            memory = held.release_buffer();
            CHECK(!memory.empty());
            if (round == 0) first_memory = memory.data();
            else CHECK(memory.data() == first_memory);  // the same memory every round, not a new buffer
        }
    }
}

TEST_CASE("a held topk payload decodes any slice from its marks, past many of them") {
    // 15,001 kept values: four marks into the index list, so slices start from marks other than the
    // first; ties at the threshold (many equal values) and runs of kept neighbours included.
    const std::size_t n = 300'001;
    std::vector<float> x = testing::gaussian(n, 21);
    for (std::size_t i = 1000; i < 1200; ++i) x[i] = 9.0f;      // a run of kept neighbours
    for (std::size_t i = 5000; i < n; i += 7919) x[i] = -3.5f;  // ties spread out
    x[n - 1] = 9.0f;                                            // kept: the last gap is small, one byte
    for (const char* spec : {"topk:frac=0.05", "topk:frac=0.05+zstd:1"}) {
        INFO(spec);
        const std::vector<std::byte> bytes = make_codec(spec)->encode(x);
        std::vector<float> whole(n);
        decode(bytes, whole);
        const HeldPayload held(bytes, n);
        std::mt19937 rng(3);
        std::vector<float> sliced(n, 1.0f);
        for (std::uint64_t first = 0; first < n;) {
            const std::uint64_t len = std::min<std::uint64_t>(n - first, 1 + rng() % 60000);
            held.decode(first, std::span(sliced).subspan(first, len));
            first += len;
        }
        CHECK(std::memcmp(sliced.data(), whole.data(), n * sizeof(float)) == 0);
        for (const std::uint64_t at : {std::uint64_t{0}, std::uint64_t{1100}, std::uint64_t{150000}, std::uint64_t{n - 1}}) {
            float one = 7.0f;  // one value, out of order: the walk starts from the right mark every time
            held.decode(at, std::span(&one, 1));
            CHECK(one == whole[at]);
        }
        CHECK(held.magnitude_bound() == 9.0f);
    }
    // An index past the end is refused when the payload is taken, before any slice.
    std::vector<std::byte> bad = make_codec("topk:frac=0.05")->encode(x);
    bad.back() = std::byte{0x7f};  // the last gap, to index n - 1, made 127: past n
    CHECK_THROWS_AS(HeldPayload(bad, n), Error);
    std::vector<std::byte> nan = make_codec("topk:frac=0.05")->encode(x);
    const float not_a_number = std::nanf("");
    std::memcpy(nan.data() + kWireHeaderBytes + 8, &not_a_number, 4);  // the first kept value
    CHECK_THROWS_AS(HeldPayload(nan, n), Error);
}

TEST_CASE("a blockwise payload held in its zstd frames gives every slice decode() gives, and is checked whole first") {
    // 2.5M values: several 1 MiB chunks, slices that straddle them, a short last block, odd counts' padding.
    const std::size_t n = 2'500'003;
    const std::vector<float> x = testing::gaussian(n, 11);
    for (const char* spec : {"int8:block=256+zstd:1", "fp4:block=32+zstd:1", "int4:block=64+zstd:3", "sign:block=128+zstd:1",
                             "int8:block=256", "topk:frac=0.01+zstd:1", "fp32+zstd:1"}) {
        INFO(spec);
        const std::vector<std::byte> bytes = make_codec(spec)->encode(x);
        std::vector<float> whole(n);
        decode(bytes, whole);
        const HeldPayload held(bytes, n, HeldPayload::Keep::frames);
        const std::uint64_t slice = slice_length(held.alignment());
        std::vector<float> sliced(n, 7.0f);
        for (std::uint64_t first = 0; first < n; first += slice)
            held.decode(first, std::span(sliced).subspan(first, std::min<std::uint64_t>(slice, n - first)));
        CHECK(std::memcmp(sliced.data(), whole.data(), n * sizeof(float)) == 0);
        // Out of order, and a slice that starts in one chunk and ends in the next.
        const std::uint64_t align = held.alignment();
        for (const std::uint64_t at : {n - n % align - align, std::uint64_t{0}, (n / 2) / align * align, std::uint64_t{0}}) {
            std::vector<float> part(std::min<std::uint64_t>(3 * slice / 2, n - at));
            held.decode(at, part);
            CHECK(std::memcmp(part.data(), whole.data() + at, part.size() * sizeof(float)) == 0);
        }
        CHECK(held.magnitude_bound() == HeldPayload(bytes, n).magnitude_bound());
    }
    // A frame that does not decompress, in the middle of the stage, is refused when the payload is
    // taken, as decode() refuses it: before any slice.
    std::vector<std::byte> bad = make_codec("int8:block=256+zstd:1")->encode(x);
    {  // the stage: [u32 chunk bytes][u32 chunks][u32 stored size each, top bit raw][chunks]
        const std::byte* body = bad.data() + kWireHeaderBytes;
        std::uint32_t chunks = 0;
        std::memcpy(&chunks, body + 4, 4);
        REQUIRE(chunks >= 3);
        std::size_t at = 8 + 4 * std::size_t{chunks};
        std::uint32_t stored[2] = {};
        std::memcpy(stored, body + 8, 8);
        REQUIRE((stored[1] & 0x80000000u) == 0);  // chunk 1 is a zstd frame, not stored raw
        at += stored[0];
        // Past its magic and frame header (at most 18 bytes): every block header made a reserved type.
        std::fill(bad.begin() + static_cast<std::ptrdiff_t>(kWireHeaderBytes + at + 18),
                  bad.begin() + static_cast<std::ptrdiff_t>(kWireHeaderBytes + at + stored[1]), std::byte{0xff});
    }
    std::vector<float> out(n);
    REQUIRE_THROWS_AS(decode(bad, out), Error);
    CHECK_THROWS_AS(HeldPayload(bad, n, HeldPayload::Keep::frames), Error);
    // A scale that is not finite, and an odd count's padding nibble set, each in a zstd stage.
    const std::vector<float> small = testing::gaussian(1001, 12);  // odd: the last code byte pads
    const std::vector<std::byte> plain = make_codec("fp4:block=32")->encode(small);
    const auto payload = [&] { return std::vector<std::byte>(plain.begin() + kWireHeaderBytes, plain.end()); };
    const char* packed = "fp4:block=32+zstd:1";
    CHECK_NOTHROW(HeldPayload(wrap_payload(packed, 1001, payload()), 1001, HeldPayload::Keep::frames));
    std::vector<std::byte> nan_scale = payload();
    std::memset(nan_scale.data(), 0xff, 4);  // the first block's scale a NaN
    CHECK_THROWS_WITH(HeldPayload(wrap_payload(packed, 1001, nan_scale), 1001, HeldPayload::Keep::frames),
                      Catch::Contains("scale"));
    std::vector<std::byte> padded = payload();
    padded.back() |= std::byte{0xf0};
    CHECK_THROWS_WITH(HeldPayload(wrap_payload(packed, 1001, padded), 1001, HeldPayload::Keep::frames),
                      Catch::Contains("padding"));
    CHECK_THROWS_AS(HeldPayload(wrap_payload(packed, 1001, payload()), 1000, HeldPayload::Keep::frames), Error);  // the count the caller expects
}

TEST_CASE("a corrupt or wrongly sized buffer is refused before anything is held") {
    const std::vector<float> x = testing::gaussian(1000, 3);
    std::vector<std::byte> bytes = make_codec("int8:block=256+zstd:1")->encode(x);
    CHECK_THROWS_AS(HeldPayload(bytes, 999), Error);  // the count the caller expects
    bytes.resize(bytes.size() - 1);                    // the zstd stage truncated
    CHECK_THROWS_AS(HeldPayload(bytes, 1000), Error);
    std::vector<std::byte> plain = make_codec("int8:block=256")->encode(x);
    std::memset(plain.data() + kWireHeaderBytes, 0xff, 4);  // the first block's scale a NaN
    CHECK_THROWS_AS(HeldPayload(plain, 1000), Error);
}

TEST_CASE("error feedback's residual, subtracted a slice at a time, is x + r - decode(encode(x + r)) exactly") {
    // 2.5M values: three slices and a short last block.
    const std::size_t n = 2'500'003;
    for (const char* spec : {"fp4:block=32+ef+zstd:1", "int8:block=256+ef", "sign:block=128+ef", "uint8+ef", "topk:frac=0.01+ef"}) {
        INFO(spec);
        const auto codec = make_codec(spec);
        const std::vector<float> x0 = testing::gaussian(n, 21), x1 = testing::gaussian(n, 22);
        codec->encode(x0);  // a residual to carry
        const std::vector<float> r0(codec->residual(0).begin(), codec->residual(0).end());
        const std::vector<std::byte> bytes = codec->encode(x1);
        std::vector<float> decoded(n);
        decode(bytes, decoded);
        const std::span<const float> r1 = codec->residual(0);
        REQUIRE(r1.size() == n);
        std::size_t differ = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const float y = x1[i] + r0[i];
            const float want = y - decoded[i];
            differ += std::memcmp(&want, &r1[i], sizeof(float)) != 0;
        }
        CHECK(differ == 0);
    }
}
