// tests/core/test_digest.cpp: core/digest.h, xxHash compiled in at the build's CPU level, gives the
// digests of Debian's libxxhash (a second build of the same code), whole and a piece at a time.
#include <catch2/catch.hpp>
#include <xxhash.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/digest.h"

namespace {

arch::Digest library_digest(std::span<const std::byte> bytes) {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(bytes.data(), bytes.size()));
    arch::Digest d;
    std::memcpy(d.data(), c.digest, d.size());
    return d;
}

}  // namespace

TEST_CASE("XXH3-128 compiled in gives libxxhash's digests, whole and in pieces", "[digest]") {
    std::mt19937 rng(5);
    std::vector<std::byte> bytes((1 << 20) + 333);
    for (auto& b : bytes) b = static_cast<std::byte>(rng());
    // Every length to 300 (XXH3's short-input paths), then long ones through its stripes and blocks.
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 300; ++n) lengths.push_back(n);
    for (const std::size_t n : {1023, 1024, 1025, 4096, 65537, 1 << 20, (1 << 20) + 333}) lengths.push_back(n);
    for (const std::size_t n : lengths) {
        INFO(n << " bytes");
        const std::span<const std::byte> part = std::span(bytes).first(n);
        const arch::Digest want = library_digest(part);
        REQUIRE(arch::xxh3_digest(part) == want);
        arch::DigestStream stream;  // in uneven pieces
        for (std::size_t at = 0, step = 1; at < n; at += step, step = step * 3 + 1) stream.add(part.subspan(at, std::min(step, n - at)));
        REQUIRE(stream.digest() == want);
    }
}
