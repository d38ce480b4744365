// tests/core/test_bytes.cpp: core/bytes.h, the one byte format: little-endian fields at the byte
// level, the length-prefixed layouts, and a reader that refuses short, oversized or non-finite input.
#include <catch2/catch.hpp>

#include <limits>

#include "core/bytes.h"
#include "tests/test_bytes.h"

using arch::ByteReader;
using arch::ByteWriter;
using arch::test::bytes_of;

TEST_CASE("fields are little-endian byte by byte", "[bytes]") {
    ByteWriter w;
    w.u8(0x01);
    w.u16(0x0203);
    w.u32(0x04050607);
    w.u64(0x08090a0b0c0d0e0full);
    w.i32(-2);
    w.f32(1.0f);  // 0x3f800000
    CHECK(w.take() == bytes_of({0x01, 0x03, 0x02, 0x07, 0x06, 0x05, 0x04, 0x0f, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08,
                                0xfe, 0xff, 0xff, 0xff, 0x00, 0x00, 0x80, 0x3f}));
    std::byte at[8];
    arch::store_le<uint64_t>(at, 0x0102030405060708ull);
    CHECK(at[0] == std::byte{0x08});
    CHECK(arch::load_le<uint32_t>(at + 4) == 0x01020304u);
}

TEST_CASE("strings carry a u32 length, blobs a u64 length", "[bytes]") {
    ByteWriter w;
    w.str("ab");
    w.bytes(bytes_of({7, 8, 9}));
    const std::span<std::byte> in_place = w.bytes_in_place(2);
    in_place[0] = std::byte{5};
    in_place[1] = std::byte{6};
    const std::vector<std::byte> out = w.take();
    CHECK(out == bytes_of({2, 0, 0, 0, 'a', 'b', 3, 0, 0, 0, 0, 0, 0, 0, 7, 8, 9, 2, 0, 0, 0, 0, 0, 0, 0, 5, 6}));
    ByteReader r(out, "test");
    CHECK(r.str() == "ab");
    CHECK(r.bytes(16) == bytes_of({7, 8, 9}));
    CHECK(r.view(16).size() == 2);
    CHECK(r.remaining() == 0);
    r.finish();
}

TEST_CASE("a reader refuses what does not fit, names what it read, and reads nothing past the end", "[bytes]") {
    const std::vector<std::byte> three = bytes_of({1, 2, 3});
    SECTION("truncated") {
        ByteReader r(three, "welcome");
        CHECK_THROWS_WITH(r.u32(), "welcome: message truncated (needs 4 bytes, has 3)");
    }
    SECTION("a length above its bound") {
        ByteWriter w;
        w.str("too long");
        const std::vector<std::byte> b = w.take();
        ByteReader r(b, "hello");
        CHECK_THROWS_WITH(r.str(4), "hello: string of 8 bytes exceeds 4");
    }
    SECTION("a blob longer than the input") {
        ByteWriter w;
        w.u64(std::numeric_limits<uint64_t>::max());
        const std::vector<std::byte> b = w.take();
        ByteReader r(b, "state");
        CHECK_THROWS_WITH(r.view(std::numeric_limits<std::size_t>::max()), Catch::Contains("state: message truncated"));
    }
    SECTION("non-finite numbers") {
        ByteWriter w;
        w.f32(std::numeric_limits<float>::infinity());
        w.f64(std::numeric_limits<double>::quiet_NaN());
        const std::vector<std::byte> b = w.take();
        ByteReader r(b, "update");
        CHECK_THROWS_WITH(r.f32(), "update: non-finite number");
        CHECK_THROWS_WITH(r.f64(), "update: non-finite number");
    }
    SECTION("trailing bytes") {
        ByteReader r(three, "bye");
        r.u8();
        CHECK_THROWS_WITH(r.finish(), "bye: 2 unexpected trailing bytes");
    }
}
